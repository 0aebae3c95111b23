package registry

import (
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/binding/bridge"
	"github.com/virtnet/virtnet/binding/macvtap"
	"github.com/virtnet/virtnet/binding/masquerade"
	"github.com/virtnet/virtnet/binding/passt"
	"github.com/virtnet/virtnet/binding/slirp"
	"github.com/virtnet/virtnet/binding/sriov"
)

// Default returns a new registry holding every binding method, and
// bridge.ManagedTap under its plugin name (KubeVirt 1.x's managedTap
// attachment: binding: {name: managed-tap}).
func Default() binding.Registry {
	r := binding.Registry{}
	for _, b := range []binding.Binding{
		bridge.Binding{}, masquerade.Binding{}, slirp.Binding{},
		sriov.Binding{}, macvtap.Binding{}, passt.Binding{}, bridge.ManagedTap{},
	} {
		r[b.Method()] = b
	}
	return r
}
