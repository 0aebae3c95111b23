package sriov

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding/internal/nicxml"
)

// Environment variables and annotation the addresses come from.
const (
	// ResourceEnvPrefix + interface name is the resource of an SR-IOV
	// interface ("intel.com/sriov_netdevice").
	ResourceEnvPrefix = "KUBEVIRT_RESOURCE_NAME_"
	// PCIDeviceEnvPrefix + the resource in [PCIDeviceEnvVar] form lists
	// the resource's addresses allocated to the pod.
	PCIDeviceEnvPrefix = "PCIDEVICE_"
	// NetworkStatusAnnotation is the Multus annotation with the devices it
	// attached.
	NetworkStatusAnnotation = "k8s.v1.cni.cncf.io/network-status"
	// NetworkInfoFile is KubeVirt 1.x's downward-API file of the pod's
	// kubevirt.io/network-info annotation, as errors name it
	// (binding.RenderOptions.NetworkInfo holds its content).
	NetworkInfoFile = "/etc/podinfo/network-info"
)

// ResourceEnvVar is the variable naming an interface's resource:
// KUBEVIRT_RESOURCE_NAME_<interface name>.
func ResourceEnvVar(iface string) string { return ResourceEnvPrefix + iface }

// PCIDeviceEnvVar is the device plugin's variable of a resource:
// "intel.com/sriov.net" → PCIDEVICE_INTEL_COM_SRIOV_NET.
func PCIDeviceEnvVar(resource string) string {
	return PCIDeviceEnvPrefix + strings.NewReplacer("/", "_", ".", "_").Replace(strings.ToUpper(resource))
}

// networkStatus is the part of one Multus network-status entry read here.
type networkStatus struct {
	Name       string `json:"name"`
	Interface  string `json:"interface"`
	DeviceInfo *struct {
		Type string `json:"type"`
		PCI  *struct {
			Address string `json:"pci-address"`
		} `json:"pci"`
	} `json:"device-info"`
}

// networkInfo is KubeVirt 1.x's downward-API network-info (the
// kubevirt.io/network-info pod annotation): per VMI network name, the
// device-info Multus reported.
type networkInfo struct {
	Interfaces []struct {
		Network    string `json:"network"`
		DeviceInfo *struct {
			PCI *struct {
				Address string `json:"pci-address"`
			} `json:"pci"`
		} `json:"deviceInfo"`
	} `json:"interfaces"`
}

// assignment is the host PCI address of one SR-IOV interface, or why
// there is none.
type assignment struct {
	address string
	err     error
}

// addressError is why there is no address: err, one of the package's
// sentinels, with the variable (or annotation) looked at and its value.
// The caller names the interface.
func addressError(variable, value string, err error) error {
	return fmt.Errorf("%s=%q: %w", variable, value, err)
}

func allocate(vmi *api.VMI, env map[string]string, netInfo []byte) map[string]assignment {
	out := map[string]assignment{}
	pairs, err := api.Pairs(vmi)
	if err != nil {
		return out
	}
	var sriov []api.Pair
	for _, p := range pairs {
		if p.Interface.SRIOV != nil {
			sriov = append(sriov, p)
		}
	}
	slices.SortFunc(sriov, func(a, b api.Pair) int { return a.Index - b.Index })

	taken := map[string]bool{}
	// 0. KubeVirt 1.x's network-info, by network name.
	if len(bytes.TrimSpace(netInfo)) > 0 {
		var ni networkInfo
		err := json.Unmarshal(netInfo, &ni)
		byNet := map[string]string{}
		for _, e := range ni.Interfaces {
			if e.Network != "" && e.DeviceInfo != nil && e.DeviceInfo.PCI != nil && e.DeviceInfo.PCI.Address != "" {
				byNet[e.Network] = e.DeviceInfo.PCI.Address
			}
		}
		if !assign(out, taken, sriov, NetworkInfoFile, string(netInfo), err, func(p api.Pair) string { return byNet[p.Network.Name] }) {
			return out
		}
	}
	// 1. Multus network-status.
	if raw, ok := vmi.Metadata.Annotations[NetworkStatusAnnotation]; ok {
		var entries []networkStatus
		err := json.Unmarshal([]byte(raw), &entries)
		byPod := map[string]string{}
		for _, e := range entries {
			if e.Interface != "" && e.DeviceInfo != nil && e.DeviceInfo.PCI != nil && e.DeviceInfo.PCI.Address != "" {
				byPod[e.Interface] = e.DeviceInfo.PCI.Address
			}
		}
		if !assign(out, taken, sriov, NetworkStatusAnnotation, raw, err, func(p api.Pair) string { return byPod[p.PodInterface] }) {
			return out
		}
	}
	// 2. Device plugin environment, in interface order.
	for _, p := range sriov {
		name := p.Interface.Name
		if _, done := out[name]; done {
			continue
		}
		out[name] = fromEnv(name, env, taken)
	}
	return out
}

// assign gives each pair not yet assigned the address addressOf finds for
// it in one source (variable, whose raw content is raw). A source that did
// not parse (perr) fails every pair, and assign reports false: no later
// source is read.
func assign(out map[string]assignment, taken map[string]bool, pairs []api.Pair, variable, raw string, perr error, addressOf func(api.Pair) string) bool {
	fail := func(p api.Pair, value string, err error) {
		out[p.Interface.Name] = assignment{err: addressError(variable, value, err)}
	}
	if perr != nil {
		for _, p := range pairs {
			fail(p, raw, fmt.Errorf("%w: %w", ErrBadNetworkStatus, perr))
		}
		return false
	}
	for _, p := range pairs {
		a := addressOf(p)
		if _, done := out[p.Interface.Name]; done || a == "" {
			continue
		}
		key := strings.ToLower(a)
		if _, err := nicxml.ParsePCIAddress(a); err != nil {
			fail(p, a, fmt.Errorf("%w: %w", ErrBadAddress, err))
		} else if taken[key] {
			fail(p, a, ErrAddressTwice)
		} else {
			out[p.Interface.Name] = assignment{address: key}
			taken[key] = true
		}
	}
	return true
}

func fromEnv(name string, env map[string]string, taken map[string]bool) assignment {
	rv := ResourceEnvVar(name)
	resource, ok := env[rv]
	if !ok || resource == "" {
		return assignment{err: addressError(rv, resource, ErrNotSet)}
	}
	pv := PCIDeviceEnvVar(resource)
	list, ok := env[pv]
	if !ok {
		return assignment{err: addressError(pv, "", ErrNotSet)}
	}
	for _, a := range strings.Split(strings.TrimSuffix(list, ","), ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		key := strings.ToLower(a)
		if taken[key] {
			continue
		}
		if _, err := nicxml.ParsePCIAddress(a); err != nil {
			return assignment{err: addressError(pv, list, fmt.Errorf("%w: %w", ErrBadAddress, err))}
		}
		taken[key] = true
		return assignment{address: key}
	}
	return assignment{err: addressError(pv, list, ErrExhausted)}
}
