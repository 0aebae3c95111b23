package bridge

import "github.com/virtnet/virtnet/api"

// Binding is the bridge binding method. Its zero value is ready to use.
type Binding struct{}

// Method is "bridge".
func (Binding) Method() string { return api.BindingBridge }
