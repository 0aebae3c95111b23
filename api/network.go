package api

import "encoding/json"

// Binding methods: exactly one is set on each interface.
const (
	BindingBridge     = "bridge"
	BindingMasquerade = "masquerade"
	BindingSlirp      = "slirp"
	BindingSRIOV      = "sriov"
	BindingMacvtap    = "macvtap"
	BindingPasst      = "passt"
)

// BindingMethods lists every binding method in a stable order (a new
// slice on each call).
func BindingMethods() []string {
	return []string{BindingBridge, BindingMasquerade, BindingSlirp, BindingSRIOV, BindingMacvtap, BindingPasst}
}

// Interface is one entry of spec.domain.devices.interfaces.
type Interface struct {
	Name string `json:"name"`

	Bridge     *struct{} `json:"bridge,omitempty"`
	Masquerade *struct{} `json:"masquerade,omitempty"`
	Slirp      *struct{} `json:"slirp,omitempty"`
	SRIOV      *struct{} `json:"sriov,omitempty"`
	Macvtap    *struct{} `json:"macvtap,omitempty"`
	Passt      *struct{} `json:"passt,omitempty"`
	// PasstBinding is KubeVirt 1.x's core passt binding (v1.9:
	// passtBinding: {}): the passt method rendered as KubeVirt v1.9 renders
	// it (a vhost-user interface with a passt backend and shared memfd
	// memory), where passt: {} keeps the older type='user' form.
	PasstBinding *struct{} `json:"passtBinding,omitempty"`
	// Plugin (JSON "binding") names a KubeVirt 1.x network binding plugin
	// (spec.configuration.network.binding.<name> of the KubeVirt CR)
	// instead of a core binding method. The library looks its name up in
	// the same registry as the core methods (phase1.Options.Registry,
	// phase2.Options.Registry, prestart.Hook.Registry): an outside binding
	// registered under the plugin's name runs through both phases. The
	// names KubeVirt 1.x gives the plugins of its former core methods
	// ([PluginAliases]: passt, macvtap, slirp) are those methods; the
	// name of another core method is refused ([Validate]). virtnet's own KubeVirt
	// plugins (cmd/virtnet-binding-sidecar) resolve their names to a core
	// method before anything else sees the VMI.
	Plugin *PluginBinding `json:"binding,omitempty"`

	MacAddress  string       `json:"macAddress,omitempty"`
	Model       string       `json:"model,omitempty"`
	Ports       []Port       `json:"ports,omitempty"`
	PciAddress  string       `json:"pciAddress,omitempty"`
	BootOrder   *uint        `json:"bootOrder,omitempty"`
	DHCPOptions *DHCPOptions `json:"dhcpOptions,omitempty"`
	// Tag is given to the guest with the interface's PCI address in the
	// ConfigDrive device metadata.
	Tag string `json:"tag,omitempty"`
	// PortRanges (KubeVirt 1.x) are port ranges a masquerade interface
	// of the pod network forwards, instead of ports.
	PortRanges []PortRange `json:"portRanges,omitempty"`
	// ACPIIndex (KubeVirt 1.x) is the NIC's ACPI index (<acpi index/>),
	// from which guests name the interface (eno<index>); 0 is none.
	ACPIIndex int `json:"acpiIndex,omitempty"`
	// State (KubeVirt 1.x) is the interface's logical state: "" or
	// [InterfaceStateUp], [InterfaceStateDown] (the NIC's link is down,
	// <link state='down'/>) or [InterfaceStateAbsent] (the interface is
	// being unplugged: neither prepared nor rendered; see [VMI.Present]).
	State string `json:"state,omitempty"`
}

// Interface states (spec.domain.devices.interfaces[].state).
const (
	InterfaceStateUp     = "up"
	InterfaceStateDown   = "down"
	InterfaceStateAbsent = "absent"
)

// Absent reports whether the interface's state is absent.
func (i *Interface) Absent() bool { return i.State == InterfaceStateAbsent }

// LinkDown reports whether the interface's state is down.
func (i *Interface) LinkDown() bool { return i.State == InterfaceStateDown }

// PortRange is one entry of interfaces[].portRanges: ports Start to End,
// both included, of Protocol (TCP or UDP; required).
type PortRange struct {
	Protocol string `json:"protocol,omitempty"`
	Start    int32  `json:"start"`
	End      int32  `json:"end"`
}

// Bindings returns the binding keys set on the interface, in
// [BindingMethods] order. A valid interface has exactly one.
func (i *Interface) Bindings() []string {
	var out []string
	for _, b := range []struct {
		name string
		set  bool
	}{
		{BindingBridge, i.Bridge != nil},
		{BindingMasquerade, i.Masquerade != nil},
		{BindingSlirp, i.Slirp != nil},
		{BindingSRIOV, i.SRIOV != nil},
		{BindingMacvtap, i.Macvtap != nil},
		{BindingPasst, i.Passt != nil},
		{BindingPasst, i.PasstBinding != nil},
	} {
		if b.set {
			out = append(out, b.name)
		}
	}
	return out
}

// Binding returns the interface's binding: its core method when exactly
// one core key is set and no plugin, the plugin's name when only a plugin
// is set, "" otherwise. It is the key of the binding registry.
func (i *Interface) Binding() string {
	b := i.Bindings()
	switch {
	case len(b) == 1 && i.Plugin == nil:
		return b[0]
	case len(b) == 0 && i.Plugin != nil:
		return i.Plugin.Name
	}
	return ""
}

// PluginBinding is KubeVirt 1.x's spec.domain.devices.interfaces[].binding.
type PluginBinding struct {
	// Name is the plugin's name in the KubeVirt CR.
	Name string `json:"name"`
}

// Port is a port the VM exposes (masquerade DNAT, slirp and passt forwards).
type Port struct {
	Name     string `json:"name,omitempty"`
	Protocol string `json:"protocol,omitempty"`
	Port     int32  `json:"port"`
}

// DHCPOptions are the extra DHCP options served to the VM.
type DHCPOptions struct {
	BootFileName   string              `json:"bootFileName,omitempty"`
	TFTPServerName string              `json:"tftpServerName,omitempty"`
	NTPServers     []string            `json:"ntpServers,omitempty"`
	PrivateOptions []DHCPPrivateOption `json:"privateOptions,omitempty"`
}

// DHCPPrivateOption is a DHCP option in the private range 224–254.
type DHCPPrivateOption struct {
	Option int    `json:"option"`
	Value  string `json:"value"`
}

// Network is one entry of spec.networks: the pod network or a Multus one.
type Network struct {
	Name   string         `json:"name"`
	Pod    *PodNetwork    `json:"pod,omitempty"`
	Multus *MultusNetwork `json:"multus,omitempty"`
	// ResourceClaim is KubeVirt 1.x's DRA network (a Kubernetes resource
	// claim); virtnet does not support it and [Validate] refuses it.
	ResourceClaim json.RawMessage `json:"resourceClaim,omitempty"`
}

// PodNetwork is the pod's primary network.
type PodNetwork struct {
	VMNetworkCIDR     string `json:"vmNetworkCIDR,omitempty"`
	VMIPv6NetworkCIDR string `json:"vmIPv6NetworkCIDR,omitempty"`
}

// MultusNetwork is a secondary (or, with Default, the primary) network
// attached by Multus.
type MultusNetwork struct {
	NetworkName string `json:"networkName,omitempty"`
	Default     bool   `json:"default,omitempty"`
}

// IsVirtio reports whether the interface's model is virtio (the default,
// [DefaultModel]); domxml.VirtioModel names the libvirt model it becomes.
func (i *Interface) IsVirtio() bool { return i.Model == "" || i.Model == DefaultModel }

// Present splits pairs into those phase1 prepares and phase2 renders and
// those whose interface is absent (KubeVirt 1.x's hot-unplug: state
// absent), keeping their order. Absent pairs stay in [Pairs] so that the
// pod interface names of the others do not move.
func Present(pairs []Pair) (present, absent []Pair) {
	for _, p := range pairs {
		if p.Interface.Absent() {
			absent = append(absent, p)
		} else {
			present = append(present, p)
		}
	}
	return present, absent
}
