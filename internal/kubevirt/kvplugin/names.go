package kvplugin

import (
	"fmt"
	"maps"
	"slices"

	"github.com/virtnet/virtnet/api"
)

// The plugin names under which virtnet's bindings are registered in the
// KubeVirt CR by default.
const (
	PluginBridge     = "virtnet-bridge"
	PluginMasquerade = "virtnet-masquerade"
	PluginSlirp      = "virtnet-slirp"
)

// Plugins maps virtnet's default plugin names to binding methods (a new
// map on each call).
func Plugins() map[string]string {
	return map[string]string{
		PluginBridge:     api.BindingBridge,
		PluginMasquerade: api.BindingMasquerade,
		PluginSlirp:      api.BindingSlirp,
	}
}

// PluginError reports a plugin name virtnet cannot serve.
type PluginError struct {
	Name   string
	Reason string
}

func (e *PluginError) Error() string {
	return fmt.Sprintf("network binding plugin %q: %s", e.Name, e.Reason)
}

// MethodFor returns the binding method of a plugin name: one of
// [Plugins], or a name ending in "-bridge", "-masquerade" or "-slirp"
// (a registration under another name, e.g. "corp-masquerade").
func MethodFor(name string) (string, error) {
	if m, ok := Plugins()[name]; ok {
		return m, nil
	}
	for _, m := range []string{api.BindingBridge, api.BindingMasquerade, api.BindingSlirp} {
		if suffix := "-" + m; len(name) > len(suffix) && name[len(name)-len(suffix):] == suffix {
			return m, nil
		}
	}
	known := slices.Sorted(maps.Keys(Plugins()))
	return "", &PluginError{Name: name, Reason: fmt.Sprintf("not a virtnet binding: use one of %v or a name ending in -bridge, -masquerade or -slirp", known)}
}
