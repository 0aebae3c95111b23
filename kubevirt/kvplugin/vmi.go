package kvplugin

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/internal/names"
)

// Served tells which plugin names a sidecar serves and their methods.
type Served func(plugin string) (method string, ok bool)

// Resolved is a KubeVirt VMI reduced to the interfaces of the served
// plugins, each turned into its virtnet binding method.
type Resolved struct {
	// VMI has only the served interfaces and their networks, with
	// defaults applied and validated.
	VMI *api.VMI
	// Pairs are VMI's pairs with the pod interface names KubeVirt 1.x
	// uses (status.interfaces[].podInterfaceName where set, else eth0 or
	// pod<hash>).
	Pairs []api.Pair
	// Plugins maps each served interface name to its plugin name.
	Plugins map[string]string
}

// statusOnly is the part of a VMI's status virtnet reads.
type statusOnly struct {
	Status struct {
		Interfaces []struct {
			Name             string `json:"name"`
			PodInterfaceName string `json:"podInterfaceName"`
		} `json:"interfaces"`
	} `json:"status"`
}

// Resolve decodes a VMI as virt-launcher sends it (JSON) and keeps the
// interfaces whose binding.name the sidecar serves. The VMI is machine
// input (api.DecodeKubeVirt): fields newer than virtnet's KubeVirt schema
// are accepted and listed in the result's VMI.Unknown, for the caller to
// log.
func Resolve(vmiJSON []byte, served Served) (*Resolved, error) {
	full, err := api.DecodeKubeVirt(vmiJSON)
	if err != nil {
		return nil, err
	}
	var st statusOnly
	if err := json.Unmarshal(vmiJSON, &st); err != nil {
		return nil, fmt.Errorf("vmi status: %w", err)
	}
	podNames := map[string]string{}
	for _, s := range st.Status.Interfaces {
		if s.Name != "" && s.PodInterfaceName != "" {
			podNames[s.Name] = s.PodInterfaceName
		}
	}
	nets := map[string]api.Network{}
	for _, n := range full.Spec.Networks {
		nets[n.Name] = n
	}
	red := *full
	red.Spec.Domain.Devices.Interfaces = nil
	red.Spec.Networks = nil
	red.Metadata.Annotations = map[string]string{}
	maps.Copy(red.Metadata.Annotations, full.Metadata.Annotations)
	red.Metadata.Annotations[api.PodInterfaceNamesAnnotation] = "hashed"
	plugins := map[string]string{}
	for i, iface := range full.Spec.Domain.Devices.Interfaces {
		if iface.Plugin == nil {
			continue
		}
		plugin := iface.Plugin.Name
		method, ok := served(plugin)
		if !ok {
			continue
		}
		if b := iface.Bindings(); len(b) > 0 {
			return nil, &api.FieldError{Path: fmt.Sprintf("spec.domain.devices.interfaces[%d].binding", i), Value: plugin,
				Reason: fmt.Sprintf("a binding plugin and the binding method %v at once", b)}
		}
		n, ok := nets[iface.Name]
		if !ok {
			return nil, &api.FieldError{Path: fmt.Sprintf("spec.domain.devices.interfaces[%d].name", i), Value: iface.Name, Reason: "no network with this name in spec.networks"}
		}
		iface.Plugin = nil
		switch method {
		case api.BindingBridge:
			iface.Bridge = &struct{}{}
		case api.BindingMasquerade:
			iface.Masquerade = &struct{}{}
		case api.BindingSlirp:
			iface.Slirp = &struct{}{}
		default:
			return nil, fmt.Errorf("network binding plugin %q: method %s is not served by a plugin", plugin, method)
		}
		plugins[iface.Name] = plugin
		red.Spec.Domain.Devices.Interfaces = append(red.Spec.Domain.Devices.Interfaces, iface)
		red.Spec.Networks = append(red.Spec.Networks, n)
	}
	r := &Resolved{VMI: &red, Plugins: plugins}
	if len(plugins) == 0 {
		return r, nil
	}
	api.SetDefaults(r.VMI)
	if err := api.Validate(r.VMI); err != nil {
		return nil, err
	}
	pairs, err := api.Pairs(r.VMI)
	if err != nil {
		return nil, err
	}
	for i := range pairs {
		if pn, ok := podNames[pairs[i].Interface.Name]; ok {
			if err := names.CheckLinkName(pn); err != nil {
				return nil, fmt.Errorf("status.interfaces %q podInterfaceName: %w", pairs[i].Interface.Name, err)
			}
			pairs[i].PodInterface = pn
		}
	}
	r.Pairs = pairs
	return r, nil
}
