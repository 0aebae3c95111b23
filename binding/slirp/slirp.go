package slirp

import "github.com/virtnet/virtnet/api"

// Binding is the slirp binding method. Its zero value is ready to use.
type Binding struct{}

// Method is "slirp".
func (Binding) Method() string { return api.BindingSlirp }
