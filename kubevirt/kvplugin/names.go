package kvplugin

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/virtnet/virtnet/api"
)

// The plugin names under which virtnet's bindings are registered in the
// KubeVirt CR by default (api's, the public names).
const (
	PluginBridge     = api.PluginBridge
	PluginMasquerade = api.PluginMasquerade
	PluginSlirp      = api.PluginSlirp
)

// Plugins maps virtnet's default plugin names to binding methods (a new
// map on each call): [api.Plugins].
func Plugins() map[string]string { return api.Plugins() }

// ErrUnknownPlugin is wrapped for a plugin name virtnet cannot serve.
var ErrUnknownPlugin = errors.New("not a virtnet binding")

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
	return "", fmt.Errorf("network binding plugin %q: %w: use one of %v or a name ending in -bridge, -masquerade or -slirp", name, ErrUnknownPlugin, known)
}
