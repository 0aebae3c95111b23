package registry

import (
	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/binding/bridge"
	"github.com/virtnet/virtnet/binding/macvtap"
	"github.com/virtnet/virtnet/binding/masquerade"
	"github.com/virtnet/virtnet/binding/passt"
	"github.com/virtnet/virtnet/binding/slirp"
	"github.com/virtnet/virtnet/binding/sriov"
)

// Default returns a new registry holding every binding method,
// bridge.ManagedTap under its plugin name (KubeVirt 1.x's managedTap
// attachment: binding: {name: managed-tap}), and virtnet's own plugin
// names ([api.Plugins]: virtnet-bridge, virtnet-masquerade, virtnet-slirp,
// as deploy/ registers them) each under the binding its plugin runs. Add
// a binding of your own under its plugin name; [binding.Registry.Check]
// refuses a VMI naming one that is not there.
func Default() binding.Registry {
	r := binding.Registry{}
	for _, b := range []binding.Binding{
		bridge.Binding{}, masquerade.Binding{}, slirp.Binding{},
		sriov.Binding{}, macvtap.Binding{}, passt.Binding{}, bridge.ManagedTap{},
	} {
		r[b.Method()] = b
	}
	for name, method := range api.Plugins() {
		r[name] = r[method]
	}
	return r
}
