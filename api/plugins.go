package api

// The KubeVirt 1.x network binding plugin names under which virtnet's
// deploy files (deploy/kubevirt-cr.yaml) register its bindings: an
// interface with binding: {name: virtnet-masquerade} is served by the
// masquerade binding. binding/registry's Default registers each under
// these names, so a manifest written for the plugins runs through the
// library's two phases as it is.
const (
	PluginBridge     = "virtnet-bridge"
	PluginMasquerade = "virtnet-masquerade"
	PluginSlirp      = "virtnet-slirp"
)

// Plugins maps virtnet's plugin names ([PluginBridge], [PluginMasquerade],
// [PluginSlirp]) to the binding method each runs (a new map on each
// call).
func Plugins() map[string]string {
	return map[string]string{
		PluginBridge:     BindingBridge,
		PluginMasquerade: BindingMasquerade,
		PluginSlirp:      BindingSlirp,
	}
}
