package passt

import "github.com/virtnet/virtnet/api"

// Binding is the passt binding method. Its zero value is ready to use.
type Binding struct{}

// Method is "passt".
func (Binding) Method() string { return api.BindingPasst }
