package slirp

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/binding/internal/nicxml"
	"github.com/virtnet/virtnet/domxml"
)

// Model is the QEMU NIC model for an interface: its own when e1000 or
// rtl8139, else e1000 (see the package doc).
func Model(iface *api.Interface) string {
	if iface.Model == "e1000" || iface.Model == "rtl8139" {
		return iface.Model
	}
	return "e1000"
}

// DefaultSearchDomain is the search domain offered when the pod's
// resolv.conf has none (KubeVirt's).
const DefaultSearchDomain = "cluster.local"

// SearchDomains returns the search domains of a resolv.conf as KubeVirt
// v0.53 reads them for slirp: every domain of every search line, in order,
// lower-cased; [DefaultSearchDomain] when there is none.
func SearchDomains(resolvConf []byte) []string {
	var out []string
	for _, line := range strings.Split(string(resolvConf), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "search" {
			continue
		}
		for _, d := range f[1:] {
			if strings.HasPrefix(d, "#") || strings.HasPrefix(d, ";") {
				break
			}
			out = append(out, strings.ToLower(d))
		}
	}
	if len(out) == 0 {
		out = []string{DefaultSearchDomain}
	}
	return out
}

// Args are the QEMU arguments of a slirp interface (see the package doc),
// offering the guest the search domains given (one dnssearch= each).
func Args(pair api.Pair, search []string) ([]string, error) {
	iface := pair.Interface
	cidr := api.DefaultVMNetworkCIDR
	if pair.Network != nil && pair.Network.Pod != nil && pair.Network.Pod.VMNetworkCIDR != "" {
		cidr = pair.Network.Pod.VMNetworkCIDR
	}
	vmNet, err := netip.ParsePrefix(cidr)
	if err != nil || !vmNet.Addr().Is4() {
		return nil, fmt.Errorf("%w %q is not an IPv4 CIDR", ErrCIDR, cidr)
	}
	netdevID := "host" + domxml.UserAliasPrefix + iface.Name
	// The network, without host bits (KubeVirt accepts "10.0.2.1/24" as
	// 10.0.2.0/24).
	netdev := []string{"user", "id=" + netdevID, "net=" + vmNet.Masked().String()}
	for _, d := range search {
		if !isDomain(d) {
			return nil, fmt.Errorf("%w %q is not a DNS name", ErrSearchDomain, d)
		}
		netdev = append(netdev, "dnssearch="+d)
	}
	for _, p := range iface.Ports {
		proto, err := nicxml.ForwardProtocol(iface, p)
		if err != nil {
			return nil, err
		}
		port := strconv.Itoa(int(p.Port))
		netdev = append(netdev, "hostfwd="+proto+"::"+port+"-:"+port)
	}
	device := []string{Model(iface), "netdev=" + netdevID, "id=" + domxml.UserAliasPrefix + iface.Name}
	if m := iface.MacAddress; m != "" {
		hw, err := net.ParseMAC(m)
		if err != nil {
			return nil, fmt.Errorf("macAddress %q: %w", m, err)
		}
		device = append(device, "mac="+hw.String())
	}
	if iface.BootOrder != nil {
		device = append(device, "bootindex="+strconv.FormatUint(uint64(*iface.BootOrder), 10))
	}
	if iface.ACPIIndex > 0 {
		device = append(device, "acpi-index="+strconv.Itoa(iface.ACPIIndex))
	}
	return []string{"-netdev", strings.Join(netdev, ","), "-device", strings.Join(device, ",")}, nil
}

// Render appends the interface's QEMU arguments to the domain's
// <qemu:commandline> (see the package doc).
func (Binding) Render(in binding.RenderInput, dom *libvirtxml.Domain) error {
	args, err := Args(in.Pair, SearchDomains(in.Options.ResolvConf))
	if err != nil {
		return err
	}
	if dom.QEMUCommandline == nil {
		dom.QEMUCommandline = &libvirtxml.DomainQEMUCommandline{}
	}
	for _, a := range args {
		dom.QEMUCommandline.Args = append(dom.QEMUCommandline.Args, libvirtxml.DomainQEMUCommandlineArg{Value: a})
	}
	return nil
}

// isDomain accepts a DNS name: labels of 1–63 letters, digits, '-' and
// '_' (seen in search lists), at most 253 bytes, an optional final dot.
// Anything else (a ',' above all, which would add QEMU options) is
// refused.
func isDomain(d string) bool {
	d = strings.TrimSuffix(d, ".")
	if d == "" || len(d) > 253 {
		return false
	}
	for _, l := range strings.Split(d, ".") {
		if l == "" || len(l) > 63 {
			return false
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}
