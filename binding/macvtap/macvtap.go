package macvtap

import "github.com/virtnet/virtnet/api"

// Binding is the macvtap binding method. Its zero value is ready to use.
type Binding struct{}

// Method is "macvtap".
func (Binding) Method() string { return api.BindingMacvtap }
