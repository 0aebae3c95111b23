package masquerade

import "github.com/virtnet/virtnet/api"

// Binding is the masquerade binding method. Its zero value is ready to use.
type Binding struct{}

// Method is "masquerade".
func (Binding) Method() string { return api.BindingMasquerade }
