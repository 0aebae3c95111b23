package slirp

import (
	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
)

// Binding is the slirp binding method. Its zero value is ready to use.
type Binding struct {
	// Phase1 has nothing to do in the pod namespace.
	binding.NoKernelWork
}

// Method is "slirp".
func (Binding) Method() string { return api.BindingSlirp }
