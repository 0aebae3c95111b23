package api

import (
	"cmp"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/virtnet/virtnet/internal/errclass"
	"github.com/virtnet/virtnet/internal/names"
)

// The patterns are compiled on first use, not at start-up: each CNI
// process imports api and would otherwise pay for them
// (docs/cni-startup.md).
var (
	dnsLabelRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`) })
	dnsSubdomRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	})
	portNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`) })
	// ifaceNameRE is KubeVirt's rule for interface and network names, with
	// a length cap (see MaxInterfaceName).
	// Compiled on first use: the counted repetition makes a 200 KB program
	// that every binary importing api would otherwise build at start-up.
	ifaceNameRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,220}$`) })
	pciAddressRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^([0-9a-fA-F]{4}):([0-9a-fA-F]{2}):([01][0-9a-fA-F])\.([0-7])$`)
	})
)

// Models returns the interface models KubeVirt accepts (a new slice on
// each call).
func Models() []string {
	return []string{"e1000", "e1000e", "igb", "ne2k_pci", "pcnet", "rtl8139", "virtio"}
}

// MaxInterfaceName is the longest interface (and network) name Validate
// accepts. KubeVirt v0.53 sets no limit; phase1 names its cache records
// after the interface ("pod-interface-<name>.json", written through
// ".tmp-pod-interface-<name>.json-<random>"), and a longer name would not
// fit Linux's 255-byte file names: such a VMI would fail in phase1.
const MaxInterfaceName = 220

// Disk buses virtnet renders.
var diskBuses = map[string]bool{"virtio": true, "sata": true, "scsi": true}

type validator struct{ errs []error }

func (v *validator) add(path string, value any, format string, args ...any) {
	v.errs = append(v.errs, &FieldError{Path: path, Value: value, Reason: fmt.Sprintf(format, args...)})
}

// Validate checks a VMI (after [SetDefaults]) and returns every problem at
// once: an [errors.Join] of [*FieldError], each naming the field path and
// value. It returns nil for a valid VMI and marks it so ([VMI.Validated]):
// it is the one validation a VMI gets, whichever entry (phase1, the
// binding CNI plugin, the sidecar) takes it next.
func Validate(vmi *VMI) error {
	v := &validator{}
	v.meta(vmi)
	v.networks(vmi)
	v.interfaces(vmi)
	v.storage(vmi)
	v.domain(vmi)
	vmi.validated = len(v.errs) == 0
	return errors.Join(v.errs...)
}

// ErrNotValidated is a VMI handed to an entry that takes validated VMIs
// only (phase1.Run), which neither [Load] nor [Validate] passed.
var ErrNotValidated = errclass.Permanent("VMI not validated (api.Load or api.Validate first)")

func (v *validator) meta(vmi *VMI) {
	if vmi.Metadata.Name == "" {
		v.add("metadata.name", nil, "required")
	} else if len(vmi.Metadata.Name) > 253 || !dnsSubdomRE().MatchString(vmi.Metadata.Name) {
		v.add("metadata.name", vmi.Metadata.Name, "not a DNS-1123 subdomain")
	}
	if uid := vmi.Metadata.UID; uid != "" && !names.FileName(uid) {
		// phase1 keeps the VMI's records in a directory of this name.
		v.add("metadata.uid", uid, "not a file name (at most 253 bytes, no '/', '\\' or NUL, not starting with '.')")
	}
	for _, l := range [][2]string{{"metadata.namespace", vmi.Metadata.Namespace}, {"spec.hostname", vmi.Spec.Hostname}, {"spec.subdomain", vmi.Spec.Subdomain}} {
		if l[1] != "" && !isDNSLabel(l[1]) {
			v.add(l[0], l[1], "not a DNS-1123 label")
		}
	}
}

func isDNSLabel(s string) bool { return len(s) <= 63 && dnsLabelRE().MatchString(s) }

// name checks the name at index i of list: required, well-formed (valid,
// else notValid) and not a duplicate; seen maps the names so far to their
// index.
func (v *validator) name(path, name string, i int, valid func(string) bool, notValid, list string, seen map[string]int) {
	j, dup := seen[name]
	switch {
	case name == "":
		v.add(path, nil, "required")
	case !valid(name):
		v.add(path, name, "%s", notValid)
	case dup:
		v.add(path, name, "duplicate of %s[%d]", list, j)
	default:
		seen[name] = i
	}
}

func (v *validator) networks(vmi *VMI) {
	seen := map[string]int{}
	pods, defaults := 0, 0
	for i, n := range vmi.Spec.Networks {
		p := fmt.Sprintf("spec.networks[%d]", i)
		v.name(p+".name", n.Name, i, ifaceNameRE().MatchString, "not a network name (1 to 220 of A-Z, a-z, 0-9, '-' and '_')", "spec.networks", seen)
		if n.ResourceClaim != nil {
			v.add(p+".resourceClaim", n.Name, "DRA networks (resourceClaim) are not supported")
		}
		switch {
		case n.ResourceClaim != nil && n.Pod == nil && n.Multus == nil:
		case n.Pod == nil && n.Multus == nil:
			v.add(p, n.Name, "needs one of pod or multus")
		case n.Pod != nil && n.Multus != nil:
			v.add(p, n.Name, "sets both pod and multus")
		case n.Pod != nil:
			pods++
			if pods > 1 {
				v.add(p+".pod", n.Name, "more than one pod network")
			}
			v.cidr(p+".pod.vmNetworkCIDR", n.Pod.VMNetworkCIDR, false)
			v.cidr(p+".pod.vmIPv6NetworkCIDR", n.Pod.VMIPv6NetworkCIDR, true)
		default:
			if n.Multus.NetworkName == "" {
				v.add(p+".multus.networkName", nil, "required")
			}
			if n.Multus.Default {
				defaults++
				if defaults > 1 {
					v.add(p+".multus.default", true, "more than one multus default network")
				}
			}
		}
	}
	if pods > 0 && defaults > 0 {
		v.add("spec.networks", nil, "a pod network and a multus default network both claim eth0")
	}
}

// cidr checks a masquerade CIDR: the right family, room for at least four
// addresses (network, gateway, VM, broadcast) and no overlap with a range
// that cannot be a VM network (see [reservedRanges]). Host bits are
// allowed, as KubeVirt allows them: the network is what is used.
func (v *validator) cidr(path, s string, ipv6 bool) {
	if s == "" {
		return
	}
	pfx, err := netip.ParsePrefix(s)
	if err != nil {
		v.add(path, s, "not a CIDR")
		return
	}
	if pfx.Addr().Is4() == ipv6 || pfx.Addr().Is4In6() {
		fam := "IPv4"
		if ipv6 {
			fam = "IPv6"
		}
		v.add(path, s, "not an %s CIDR", fam)
		return
	}
	if pfx.Addr().BitLen()-pfx.Bits() < 2 {
		v.add(path, s, "less than 4 addresses")
	}
	for _, r := range reservedRanges() {
		if r.prefix.Overlaps(pfx) {
			v.add(path, s, "overlaps %s %s", r.what, r.prefix)
			return
		}
	}
}

// reservedRange is an address range a VM network may not overlap.
type reservedRange struct {
	prefix netip.Prefix
	what   string
}

// reservedRanges are the ranges a vmNetworkCIDR or vmIPv6NetworkCIDR may
// not overlap: addresses that are not unicast, or that the pod itself
// needs (loopback, link-local: the bridge binding's 169.254.75.0/24 and
// every fe80:: address of the bridge). A covering prefix such as
// 0.0.0.0/0 or ::/0 overlaps them all.
func reservedRanges() []reservedRange {
	r := func(p, what string) reservedRange { return reservedRange{netip.MustParsePrefix(p), what} }
	return []reservedRange{
		r("0.0.0.0/8", `"this network"`),
		r("127.0.0.0/8", "loopback"),
		r("169.254.0.0/16", "link-local (phase1's bridges use 169.254.75.0/24)"),
		r("224.0.0.0/4", "multicast"),
		r("240.0.0.0/4", "reserved class E (and broadcast)"),
		r("::/128", "the unspecified address"),
		r("::1/128", "loopback"),
		r("::ffff:0:0/96", "IPv4-mapped"),
		r("fe80::/10", "link-local"),
		r("ff00::/8", "multicast"),
	}
}

func (v *validator) interfaces(vmi *VMI) {
	nets := map[string]*Network{}
	for i := range vmi.Spec.Networks {
		nets[vmi.Spec.Networks[i].Name] = &vmi.Spec.Networks[i]
	}
	ifaces := map[string]int{}
	// declared holds every interface name, valid or not, so that a
	// network is not also reported as lacking an interface whose name
	// was already refused.
	declared := map[string]bool{}
	portNames := map[string]string{}
	macs := map[string]int{}
	for i := range vmi.Spec.Domain.Devices.Interfaces {
		iface := &vmi.Spec.Domain.Devices.Interfaces[i]
		p := fmt.Sprintf("spec.domain.devices.interfaces[%d]", i)
		declared[iface.Name] = true
		v.name(p+".name", iface.Name, i, ifaceNameRE().MatchString, "not an interface name (1 to 220 of A-Z, a-z, 0-9, '-' and '_')",
			"spec.domain.devices.interfaces", ifaces)
		nw := nets[iface.Name]
		if nw == nil && iface.Name != "" {
			v.add(p+".name", iface.Name, "no network with this name in spec.networks")
		}
		bindings := iface.Bindings()
		switch {
		case iface.Plugin != nil && len(bindings) > 0:
			v.add(p+".binding", iface.Plugin.Name, "a binding plugin and the binding method %s at once", strings.Join(bindings, ","))
		case iface.Plugin != nil:
			v.plugin(p+".binding.name", iface.Plugin.Name)
			if slices.Contains(PluginAliases(), iface.Plugin.Name) {
				v.binding(p, iface, nw)
			}
		case len(bindings) == 0:
			v.add(p, iface.Name, "needs one binding method (one of %s) or a binding plugin (binding: {name: …})", strings.Join(BindingMethods(), ", "))
		case len(bindings) == 1:
			v.binding(p, iface, nw)
		default:
			v.add(p, strings.Join(bindings, ","), "more than one binding method")
		}
		if iface.MacAddress != "" {
			v.mac(p+".macAddress", iface.MacAddress, bindings)
			if hw, err := net.ParseMAC(iface.MacAddress); err == nil {
				if j, dup := macs[hw.String()]; dup {
					v.add(p+".macAddress", iface.MacAddress, "same MAC address as spec.domain.devices.interfaces[%d]", j)
				} else {
					macs[hw.String()] = i
				}
			}
		}
		if iface.Model != "" && !slices.Contains(Models(), iface.Model) {
			v.add(p+".model", iface.Model, "unknown model; one of %s", strings.Join(Models(), ", "))
		}
		if iface.PciAddress != "" && !pciAddressRE().MatchString(iface.PciAddress) {
			v.add(p+".pciAddress", iface.PciAddress, "not a PCI address dddd:bb:ss.f")
		}
		// KubeVirt v0.53 checks ports on interfaces of the pod network
		// only, whatever their binding; elsewhere they are ignored.
		if nw != nil && nw.Pod != nil {
			v.ports(p, iface, portNames)
			v.portRanges(p, iface)
		}
		v.state(p, iface, nw)
		if iface.ACPIIndex < 0 {
			v.add(p+".acpiIndex", iface.ACPIIndex, "negative")
		}
		v.dhcp(p+".dhcpOptions", iface.DHCPOptions)
	}
	for i, n := range vmi.Spec.Networks {
		if !declared[n.Name] && n.Name != "" {
			v.add(fmt.Sprintf("spec.networks[%d].name", i), n.Name, "no interface with this name in spec.domain.devices.interfaces")
		}
	}
	virtio := slices.ContainsFunc(vmi.Spec.Domain.Devices.Interfaces, func(i Interface) bool { return i.IsVirtio() })
	if mq := vmi.Spec.Domain.Devices.NetworkInterfaceMultiQueue; mq != nil && *mq && !virtio && len(vmi.Spec.Domain.Devices.Interfaces) > 0 {
		v.add("spec.domain.devices.networkInterfaceMultiqueue", true, "virtio-net multiqueue requested, but no interface uses the virtio model")
	}
	v.bootOrders(vmi)
}

func (v *validator) binding(p string, iface *Interface, net *Network) {
	b := iface.Binding()
	if net == nil {
		return
	}
	key := p + "." + b
	switch {
	case iface.Plugin != nil:
		key = p + ".binding.name"
	case iface.PasstBinding != nil:
		key = p + ".passtBinding"
	}
	switch b {
	case BindingMasquerade, BindingSlirp, BindingPasst:
		// KubeVirt v0.53 refuses masquerade and slirp on anything but
		// spec.networks[].pod, a multus default network included.
		if net.Pod == nil {
			v.add(key, iface.Name, "%s binding is only possible on the pod network (spec.networks[].pod)", b)
		}
	case BindingMacvtap, BindingSRIOV:
		if net.Multus == nil {
			v.add(key, iface.Name, "%s binding needs a multus network", b)
		}
	}
}

// PluginAliases are the KubeVirt 1.x binding plugin names that resolve to
// a virtnet core method of the same name (a new slice on each call):
// KubeVirt 1.x dropped the core keys passt, macvtap and slirp and its
// documentation registers their plugins under these names, so
// binding: {name: passt} is passt: {} (rendered as KubeVirt's passt
// plugin renders it, type='user').
func PluginAliases() []string {
	return []string{BindingPasst, BindingMacvtap, BindingSlirp}
}

// MaxPortRanges is the most portRanges one interface may have (KubeVirt
// v1.9's webhook).
const MaxPortRanges = 10

// portRanges checks interfaces[].portRanges as KubeVirt v1.9's webhook
// does (pod network only): masquerade only, not with ports, at most
// MaxPortRanges, protocol TCP or UDP (required), 1 <= start <= end <=
// 65535, and no two ranges of one protocol overlapping.
func (v *validator) portRanges(p string, iface *Interface) {
	if iface.PortRanges == nil {
		return
	}
	if iface.Ports != nil {
		v.add(p+".portRanges", len(iface.PortRanges), "ports and portRanges at once")
	}
	if iface.Binding() != BindingMasquerade {
		v.add(p+".portRanges", len(iface.PortRanges), "portRanges only on a masquerade interface (binding %q)", iface.Binding())
	}
	if len(iface.PortRanges) > MaxPortRanges {
		v.add(p+".portRanges", len(iface.PortRanges), "more than %d port ranges", MaxPortRanges)
		return
	}
	type span struct {
		start, end int32
		index      int
	}
	byProto := map[string][]span{}
	for j, r := range iface.PortRanges {
		rp := fmt.Sprintf("%s.portRanges[%d]", p, j)
		switch {
		case r.Protocol != "TCP" && r.Protocol != "UDP":
			v.add(rp+".protocol", r.Protocol, "neither TCP nor UDP (required)")
		case r.Start < 1 || r.Start > 65535:
			v.add(rp+".start", r.Start, "outside 1-65535")
		case r.End < 1 || r.End > 65535:
			v.add(rp+".end", r.End, "outside 1-65535")
		case r.Start > r.End:
			v.add(rp+".start", r.Start, "after end %d", r.End)
		default:
			byProto[r.Protocol] = append(byProto[r.Protocol], span{r.Start, r.End, j})
		}
	}
	for _, proto := range []string{"TCP", "UDP"} {
		spans := byProto[proto]
		for a := range spans {
			for b := a + 1; b < len(spans); b++ {
				if spans[a].start <= spans[b].end && spans[b].start <= spans[a].end {
					v.add(fmt.Sprintf("%s.portRanges[%d]", p, spans[b].index), fmt.Sprintf("%d-%d", spans[b].start, spans[b].end),
						"%s range overlaps portRanges[%d] (%d-%d)", proto, spans[a].index, spans[a].start, spans[a].end)
				}
			}
		}
	}
}

// state checks interfaces[].state as KubeVirt v1.9's webhook does: up,
// down or absent; down and up not on SR-IOV; absent only on a bridge
// interface of a secondary network.
func (v *validator) state(p string, iface *Interface, nw *Network) {
	switch iface.State {
	case "", InterfaceStateUp:
	case InterfaceStateDown:
	case InterfaceStateAbsent:
		if iface.Binding() != BindingBridge {
			v.add(p+".state", iface.State, "absent only on a bridge interface (binding %q)", iface.Binding())
		}
		if nw != nil && (nw.Pod != nil || nw.Multus != nil && nw.Multus.Default) {
			v.add(p+".state", iface.State, "absent not on the default network")
		}
		return
	default:
		v.add(p+".state", iface.State, "not an interface state (up, down or absent)")
		return
	}
	if iface.State != "" && iface.SRIOV != nil {
		v.add(p+".state", iface.State, "a link state on an SR-IOV interface")
	}
	if iface.State == InterfaceStateDown && iface.Binding() == BindingSlirp {
		// Slirp's NIC is given on QEMU's command line, which has no
		// link state: libvirt would have to set it after start.
		v.add(p+".state", iface.State, "link state down on a slirp interface (its QEMU command line cannot say it)")
	}
}

// pluginNameRE is what a binding plugin's name may be: a key of the
// KubeVirt CR's spec.configuration.network.binding (a DNS subdomain).
// Compiled on first use, as ifaceNameRE.
var pluginNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$`) })

func (v *validator) plugin(p, name string) {
	switch {
	case !pluginNameRE().MatchString(name):
		v.add(p, name, "not a binding plugin name (a DNS subdomain: 1 to 253 of a-z, 0-9, '-' and '.')")
	case slices.Contains(BindingMethods(), name) && !slices.Contains(PluginAliases(), name):
		v.add(p, name, "the name of a core binding method: set %s: {} on the interface instead, or register the plugin under another name", name)
	}
}

// MasqueradeBridgeMAC is the MAC of the masquerade bridge; a VM may not
// use it.
const MasqueradeBridgeMAC = names.MasqueradeBridgeMAC

func (v *validator) mac(path, s string, bindings []string) {
	hw, err := net.ParseMAC(s)
	if err != nil || len(hw) != 6 {
		v.add(path, s, "not a 48-bit MAC address aa:bb:cc:dd:ee:ff")
		return
	}
	if why := notUnicast(hw); why != "" {
		v.add(path, s, "%s", why)
	}
	if strings.EqualFold(hw.String(), MasqueradeBridgeMAC) && slices.Contains(bindings, BindingMasquerade) {
		v.add(path, s, "reserved for the masquerade bridge")
	}
}

// notUnicast says why a 6-byte MAC cannot be a VM's (multicast, all
// zero), or "" when it can: the rule of a spec macAddress and of a
// status.interfaces mac alike.
func notUnicast(hw net.HardwareAddr) string {
	switch {
	case hw[0]&1 == 1:
		return "multicast MAC address (least significant bit of the first octet set)"
	case hw.String() == "00:00:00:00:00:00":
		return "all-zero MAC address"
	}
	return ""
}

func (v *validator) ports(p string, iface *Interface, names map[string]string) {
	type key struct {
		proto string
		port  int32
	}
	seen := map[key]int{}
	for j, port := range iface.Ports {
		pp := fmt.Sprintf("%s.ports[%d]", p, j)
		if port.Name != "" {
			if len(port.Name) > 15 || !portNameRE().MatchString(port.Name) || strings.Contains(port.Name, "--") ||
				!strings.ContainsAny(port.Name, "abcdefghijklmnopqrstuvwxyz") {
				v.add(pp+".name", port.Name, "not an IANA service name (at most 15 of a-z, 0-9 and '-', with a letter)")
			} else if other, dup := names[port.Name]; dup {
				v.add(pp+".name", port.Name, "duplicate of %s", other)
			} else {
				names[port.Name] = pp + ".name"
			}
		}
		if port.Port < 1 || port.Port > 65535 {
			v.add(pp+".port", port.Port, "outside 1-65535")
		}
		proto := cmp.Or(port.Protocol, DefaultProtocol)
		if proto != "TCP" && proto != "UDP" {
			v.add(pp+".protocol", port.Protocol, "neither TCP nor UDP")
		}
		k := key{proto, port.Port}
		// A port declared twice is one forward for masquerade and passt
		// (KubeVirt v0.53 accepts it); slirp's QEMU would try to bind the
		// host port twice and fail.
		if first, dup := seen[k]; dup && iface.Binding() == BindingSlirp {
			v.add(pp+".port", port.Port, "%s port already declared at ports[%d]", proto, first)
		} else if !dup {
			seen[k] = j
		}
	}
}

// MaxNTPServers is the most dhcpOptions.ntpServers one DHCP option (255
// bytes, 4 per address) carries: more could never reach the guest.
const MaxNTPServers = 63

func (v *validator) dhcp(p string, o *DHCPOptions) {
	if o == nil {
		return
	}
	if len(o.NTPServers) > MaxNTPServers {
		v.add(p+".ntpServers", len(o.NTPServers), "more than %d addresses do not fit in one DHCP option", MaxNTPServers)
	}
	for i, s := range o.NTPServers {
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is4() {
			v.add(fmt.Sprintf("%s.ntpServers[%d]", p, i), s, "not an IPv4 address")
		}
	}
	seen := map[int]bool{}
	for i, po := range o.PrivateOptions {
		pp := fmt.Sprintf("%s.privateOptions[%d].option", p, i)
		if po.Option < 224 || po.Option > 254 {
			v.add(pp, po.Option, "private DHCP options are 224-254")
		} else if seen[po.Option] {
			v.add(pp, po.Option, "duplicate private option")
		}
		seen[po.Option] = true
		if len(po.Value) > 255 {
			v.add(fmt.Sprintf("%s.privateOptions[%d].value", p, i), len(po.Value), "longer than 255 bytes")
		}
	}
	for _, f := range []struct{ key, s string }{{"bootFileName", o.BootFileName}, {"tftpServerName", o.TFTPServerName}} {
		if len(f.s) > 255 {
			v.add(p+"."+f.key, len(f.s), "longer than 255 bytes")
		}
	}
}

func (v *validator) bootOrders(vmi *VMI) {
	seen := map[uint]string{}
	check := func(path string, o *uint) {
		if o == nil {
			return
		}
		if *o < 1 {
			v.add(path, *o, "boot order starts at 1")
			return
		}
		if other, dup := seen[*o]; dup {
			v.add(path, *o, "boot order already used by %s", other)
			return
		}
		seen[*o] = path
	}
	for i, d := range vmi.Spec.Domain.Devices.Disks {
		check(fmt.Sprintf("spec.domain.devices.disks[%d].bootOrder", i), d.BootOrder)
	}
	for i, iface := range vmi.Spec.Domain.Devices.Interfaces {
		check(fmt.Sprintf("spec.domain.devices.interfaces[%d].bootOrder", i), iface.BootOrder)
	}
}

func (v *validator) storage(vmi *VMI) {
	vols := map[string]int{}
	// The first volume of each cloud-init kind: its image has a fixed
	// name per VMI (domxml.ISOPath), so a second would share it.
	firstCloudInit := map[string]int{}
	for i, vol := range vmi.Spec.Volumes {
		p := fmt.Sprintf("spec.volumes[%d]", i)
		cloudInits := []struct {
			key string
			src *CloudInitSource
		}{{"cloudInitNoCloud", vol.CloudInitNoCloud}, {"cloudInitConfigDrive", vol.CloudInitConfigDrive}}
		for _, ci := range cloudInits {
			if ci.src == nil {
				continue
			}
			if j, dup := firstCloudInit[ci.key]; dup {
				v.add(p+"."+ci.key, vol.Name, "a second %s volume (the first is spec.volumes[%d] %q): at most one volume of each cloud-init kind",
					ci.key, j, vmi.Spec.Volumes[j].Name)
			} else {
				firstCloudInit[ci.key] = i
			}
		}
		v.name(p+".name", vol.Name, i, isDNSLabel, "not a DNS-1123 label", "spec.volumes", vols)
		if count(vol.ContainerDisk != nil, vol.PersistentVolumeClaim != nil, vol.DataVolume != nil, vol.EmptyDisk != nil,
			vol.HostDisk != nil, vol.CloudInitNoCloud != nil, vol.CloudInitConfigDrive != nil, vol.Sysprep != nil) > 1 {
			v.add(p, vol.Name, "more than one volume source")
		}
		switch {
		case vol.ContainerDisk != nil && vol.ContainerDisk.Image == "":
			v.add(p+".containerDisk.image", nil, "required")
		case vol.PersistentVolumeClaim != nil && vol.PersistentVolumeClaim.ClaimName == "":
			v.add(p+".persistentVolumeClaim.claimName", nil, "required")
		case vol.EmptyDisk != nil:
			v.quantity(p+".emptyDisk.capacity", vol.EmptyDisk.Capacity)
		case vol.HostDisk != nil && !strings.HasPrefix(vol.HostDisk.Path, "/"):
			v.add(p+".hostDisk.path", vol.HostDisk.Path, "not an absolute path")
		case vol.Sysprep != nil && (vol.Sysprep.Secret == nil) == (vol.Sysprep.ConfigMap == nil):
			v.add(p+".sysprep", vol.Name, "needs exactly one of secret or configMap")
		}
		for _, ci := range cloudInits {
			if ci.src == nil {
				continue
			}
			s := ci.src
			users := count(s.UserData != "", s.UserDataBase64 != "", s.UserDataSecretRef != nil)
			nets := count(s.NetworkData != "", s.NetworkDataBase64 != "", s.NetworkDataSecretRef != nil)
			if users > 1 {
				v.add(p+"."+ci.key, vol.Name, "more than one of userData, userDataBase64, secretRef")
			}
			if nets > 1 {
				v.add(p+"."+ci.key, vol.Name, "more than one of networkData, networkDataBase64, networkDataSecretRef")
			}
			if users+nets == 0 {
				v.add(p+"."+ci.key, vol.Name, "has neither user data nor network data")
			}
			cp := p + "." + ci.key
			v.inline(cp+".userData", cp+".userDataBase64", s.UserData, s.UserDataBase64, MaxInlineUserData, "secretRef")
			v.inline(cp+".networkData", cp+".networkDataBase64", s.NetworkData, s.NetworkDataBase64, MaxInlineNetworkData, "networkDataSecretRef")
			if s.UserDataSecretRef != nil && s.UserDataSecretRef.Name == "" {
				v.add(cp+".secretRef.name", nil, "required")
			}
			if s.NetworkDataSecretRef != nil && s.NetworkDataSecretRef.Name == "" {
				v.add(cp+".networkDataSecretRef.name", nil, "required")
			}
		}
	}
	disks := map[string]int{}
	for i, d := range vmi.Spec.Domain.Devices.Disks {
		p := fmt.Sprintf("spec.domain.devices.disks[%d]", i)
		if j, dup := disks[d.Name]; dup {
			v.add(p+".name", d.Name, "duplicate of spec.domain.devices.disks[%d]", j)
		}
		disks[d.Name] = i
		if _, ok := vols[d.Name]; !ok {
			v.add(p+".name", d.Name, "no volume with this name in spec.volumes")
		}
		if count(d.Disk != nil, d.CDRom != nil, d.LUN != nil) > 1 {
			v.add(p, d.Name, "more than one of disk, cdrom, lun")
		}
		bus, busPath := "", ""
		switch {
		case d.Disk != nil:
			bus, busPath = d.Disk.Bus, p+".disk.bus"
			if d.Disk.PciAddress != "" && !pciAddressRE().MatchString(d.Disk.PciAddress) {
				v.add(p+".disk.pciAddress", d.Disk.PciAddress, "not a PCI address dddd:bb:ss.f")
			}
		case d.CDRom != nil:
			bus, busPath = d.CDRom.Bus, p+".cdrom.bus"
			if bus == "virtio" {
				v.add(busPath, bus, "a cdrom cannot use the virtio bus")
			}
		case d.LUN != nil:
			bus, busPath = d.LUN.Bus, p+".lun.bus"
		}
		if bus != "" && !diskBuses[bus] {
			v.add(busPath, bus, "unknown bus; one of virtio, sata, scsi")
		}
		if d.Cache != "" && d.Cache != "none" && d.Cache != "writethrough" {
			v.add(p+".cache", d.Cache, "one of none, writethrough")
		}
		if d.IO != "" && d.IO != "native" && d.IO != "threads" && d.IO != "default" {
			v.add(p+".io", d.IO, "one of native, threads, default")
		}
		if d.Shareable != nil && *d.Shareable && d.Cache != "" && d.Cache != "none" {
			v.add(p+".cache", d.Cache, "a shareable disk needs cache none")
		}
	}
}

// Size limits of inline cloud-init data. KubeVirt v0.53's admission
// webhook refuses inline user data and inline network data (userData and
// networkData, or what userDataBase64 and networkDataBase64 decode to) over
// 2048 bytes each, and points to the secret references for anything larger.
const (
	MaxInlineUserData    = 2048
	MaxInlineNetworkData = 2048
)

// inline checks one inline cloud-init datum: raw at rawPath or base64 at
// b64Path, at most max bytes (decoded), valid standard base64.
func (v *validator) inline(rawPath, b64Path, raw, b64 string, max int, ref string) {
	if len(raw) > max {
		v.add(rawPath, len(raw), "more than %d bytes; use %s for larger data", max, ref)
	}
	if b64 == "" {
		return
	}
	if base64.StdEncoding.DecodedLen(len(b64)) > max+3 {
		// Not decoded: the limit is known to be exceeded (and a huge
		// value is not copied again).
		v.add(b64Path, len(b64), "decodes to more than %d bytes; use %s for larger data", max, ref)
		return
	}
	b, err := base64.StdEncoding.DecodeString(b64)
	switch {
	case err != nil:
		v.add(b64Path, b64, "not valid standard base64: %v", err)
	case len(b) > max:
		v.add(b64Path, len(b), "decodes to more than %d bytes; use %s for larger data", max, ref)
	}
}

func (v *validator) domain(vmi *VMI) {
	d := &vmi.Spec.Domain
	if d.Memory != nil && d.Memory.Guest != "" {
		v.quantity("spec.domain.memory.guest", d.Memory.Guest)
	}
	if q, ok := d.Resources.Requests["memory"]; ok {
		v.quantity("spec.domain.resources.requests.memory", q)
	}
	if d.Firmware != nil {
		if u := d.Firmware.UUID; u != "" && !uuidRE().MatchString(u) {
			v.add("spec.domain.firmware.uuid", u, "not a UUID")
		}
		if b := d.Firmware.Bootloader; b != nil && b.BIOS != nil && b.EFI != nil {
			v.add("spec.domain.firmware.bootloader", nil, "sets both bios and efi")
		}
	}
	for _, res := range []struct {
		path string
		m    map[string]string
	}{{"spec.domain.resources.requests.cpu", d.Resources.Requests}, {"spec.domain.resources.limits.cpu", d.Resources.Limits}} {
		if q, ok := res.m["cpu"]; ok {
			if _, err := ParseCPUQuantity(q); err != nil {
				v.add(res.path, q, "%v", err)
			}
		}
	}
	if n := vmi.VCPUs(); n > MaxVCPUs {
		v.add("spec.domain.cpu", n, "more than %d vCPUs", MaxVCPUs)
	}
	if d.Memory != nil && d.Memory.Hugepages != nil {
		v.quantity("spec.domain.memory.hugepages.pageSize", d.Memory.Hugepages.PageSize)
	}
	if d.CPU != nil {
		for i, f := range d.CPU.Features {
			p := fmt.Sprintf("spec.domain.cpu.features[%d]", i)
			if f.Name == "" {
				v.add(p+".name", f.Name, "a CPU feature needs a name")
			}
			if f.Policy != "" && !slices.Contains(CPUFeaturePolicies(), f.Policy) {
				v.add(p+".policy", f.Policy, "one of %s", strings.Join(CPUFeaturePolicies(), ", "))
			}
		}
	}
}

// quantity checks a Kubernetes quantity ([ParseQuantity]).
func (v *validator) quantity(path, q string) {
	if _, err := ParseQuantity(q); err != nil {
		v.add(path, q, "%v", err)
	}
}

// MaxVCPUs is the most vCPUs a VMI may have.
const MaxVCPUs = 512

// CPUFeaturePolicies are libvirt's CPU feature policies, the values of
// spec.domain.cpu.features[].policy.
func CPUFeaturePolicies() []string {
	return []string{"force", "require", "optional", "disable", "forbid"}
}

var uuidRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
})

func count(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
