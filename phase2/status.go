package phase2

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"slices"
	"strings"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
)

// Info sources of a status.interfaces entry, as KubeVirt v1.9.0 spells
// them; an entry lists several joined by ", ".
const (
	InfoSourceDomain       = "domain"
	InfoSourceGuestAgent   = "guest-agent"
	InfoSourceMultusStatus = "multus-status"
)

const (
	infoSourceSep = ", "
	// maxGuestOnly is how many guest interfaces without a domain
	// interface of their MAC make it into the status.
	maxGuestOnly = 10
	// userAlias prefixes the aliases KubeVirt gives the devices of spec
	// interfaces ("ua-<name>"); sriovAlias follows it on SR-IOV host
	// devices ("ua-sriov-<name>").
	userAlias  = "ua-"
	sriovAlias = "sriov-"
)

// StatusInput is what [Status] computes status.interfaces from.
type StatusInput struct {
	// VMI is the VMI with status.interfaces as last reported: the
	// podInterfaceName of each entry, the multus-status entries (set by
	// virt-controller) and the primary network's entry are kept from it.
	VMI *api.VMI
	// Domain is the libvirt domain XML (the running domain's, or the one
	// phase2 rendered): its interfaces and SR-IOV host devices, by alias.
	Domain []byte
	// PodIPs are the pod IPs of each interface, by interface name, as
	// phase1 recorded them (see [StatusPodIPs]); an interface without an
	// entry shows no pod IP.
	PodIPs map[string][]string
	// GuestAgent is the guest agent's report: the "return" value of
	// qemu-guest-agent's guest-network-get-interfaces (a JSON array of
	// {name, hardware-address, ip-addresses: [{ip-address-type,
	// ip-address, prefix}]}); nil or empty when the guest runs no agent.
	GuestAgent []byte
}

// Status computes a VMI's status.interfaces as KubeVirt v1.9.0's
// virt-handler does (pkg/network/setup NetStat.UpdateStatus), so that a
// launcher built on virtnet can report them:
//
//  1. one entry per interface of the domain, named by its alias without
//     "ua-", with its MAC, infoSource "domain", queueCount (the driver's
//     queues, else 1) and linkState ("up" unless the domain says);
//     then one per SR-IOV host device ("ua-sriov-<name>"), with the
//     spec's macAddress;
//  2. each entry of a spec interface takes its pod IPs (ipAddress is the
//     first), none when [StatusInput.PodIPs] has none;
//  3. each guest agent interface (but "lo") whose MAC is an entry's adds
//     its guest name and "guest-agent" to that entry, and its addresses
//     per family where the entry has none of the family or the agent
//     reports none of it (IPv6 link-local ones dropped on a masquerade
//     interface); the others, up to 10, become entries of their own
//     without a name (infoSource "guest-agent");
//  4. the pod network's entry comes first; if it is missing and the
//     previous status had one, an entry with its name alone stands in;
//  5. each previous multus-status entry adds "multus-status" to the
//     entry of its name, or becomes an entry of its own if the spec has
//     the interface (in previous status order; KubeVirt's order there
//     is a map's);
//  6. each named entry takes podInterfaceName from the (last) previous
//     entry of its name (empty if none).
//
// An interface device without an alias gets an entry without a name
// (KubeVirt expects one on each). Status fails on XML or JSON that does
// not parse, naming the input.
func Status(in StatusInput) ([]api.InterfaceStatus, error) {
	var dom statusDomain
	if err := xml.Unmarshal(in.Domain, &dom); err != nil {
		return nil, fmt.Errorf("domain XML: %w", err)
	}
	var agent []guestAgentInterface
	if len(strings.TrimSpace(string(in.GuestAgent))) > 0 {
		if err := json.Unmarshal(in.GuestAgent, &agent); err != nil {
			return nil, fmt.Errorf("guest agent report (guest-network-get-interfaces): %w", err)
		}
	}
	spec := map[string]*api.Interface{}
	for i := range in.VMI.Spec.Domain.Devices.Interfaces {
		iface := &in.VMI.Spec.Domain.Devices.Interfaces[i]
		spec[iface.Name] = iface // the last of a name, as KubeVirt indexes them
	}
	prev := in.VMI.Status.Interfaces

	// 1. The domain.
	var out []api.InterfaceStatus
	for _, d := range dom.Devices.Interfaces {
		s := api.InterfaceStatus{Name: strings.TrimPrefix(d.Alias.Name, userAlias), MAC: d.MAC.Address,
			InfoSource: InfoSourceDomain, QueueCount: 1, LinkState: "up"}
		if d.Driver.Queues != nil {
			s.QueueCount = int32(*d.Driver.Queues)
		}
		if d.Link != nil {
			s.LinkState = d.Link.State
		}
		out = append(out, s)
	}
	for _, h := range dom.Devices.HostDevs {
		name, ok := strings.CutPrefix(strings.TrimPrefix(h.Alias.Name, userAlias), sriovAlias)
		if !ok {
			continue
		}
		s := api.InterfaceStatus{Name: name, InfoSource: InfoSourceDomain}
		if iface, ok := spec[name]; ok {
			s.MAC = iface.MacAddress
		}
		out = append(out, s)
	}

	// 2. The pod IPs.
	for _, iface := range in.VMI.Spec.Domain.Devices.Interfaces {
		if s := byName(out, iface.Name); s != nil {
			setIPs(s, slices.Clone(in.PodIPs[iface.Name]))
		}
	}

	// 3. The guest agent.
	guestOnly := 0
	for _, g := range agent {
		if g.Name == "lo" {
			continue
		}
		ips := g.ips()
		s := entry(out, func(e api.InterfaceStatus) bool { return e.MAC == g.MAC })
		if s == nil {
			if guestOnly >= maxGuestOnly {
				continue
			}
			guestOnly++
			out = append(out, api.InterfaceStatus{MAC: g.MAC, IPs: ips, IP: g.firstIP(), InterfaceName: g.Name, InfoSource: InfoSourceGuestAgent})
			continue
		}
		if iface, ok := spec[s.Name]; ok && iface.Masquerade != nil {
			ips = slices.DeleteFunc(ips, func(ip string) bool {
				a, err := netip.ParseAddr(ip)
				return err != nil || a.IsLinkLocalUnicast()
			})
		}
		mergeGuestIPs(s, ips)
		s.InterfaceName = g.Name
		if g.Name != "" {
			s.InfoSource = InfoSourceDomain + infoSourceSep + InfoSourceGuestAgent
		}
	}

	// 4. The pod network first.
	if i := slices.IndexFunc(in.VMI.Spec.Networks, func(n api.Network) bool { return n.Pod != nil }); i >= 0 {
		name := in.VMI.Spec.Networks[i].Name
		switch j := slices.IndexFunc(out, func(s api.InterfaceStatus) bool { return s.Name == name }); {
		case j > 0:
			p := out[j]
			out = slices.Insert(slices.Delete(out, j, j+1), 0, p)
		case j < 0 && byName(prev, name) != nil:
			out = slices.Insert(out, 0, api.InterfaceStatus{Name: name})
		}
	}

	// 5. Multus.
	seen := map[string]bool{}
	for _, p := range prev {
		if seen[p.Name] || !hasInfoSource(p.InfoSource, InfoSourceMultusStatus) {
			continue
		}
		seen[p.Name] = true
		s := byName(out, p.Name)
		switch _, inSpec := spec[p.Name]; {
		case s != nil:
			s.InfoSource = addInfoSource(s.InfoSource, InfoSourceMultusStatus)
		case inSpec:
			out = append(out, api.InterfaceStatus{Name: p.Name, InfoSource: InfoSourceMultusStatus})
		}
	}

	// 6. The pod interface names.
	for i := range out {
		if out[i].Name == "" {
			continue
		}
		out[i].PodInterfaceName = ""
		for _, p := range prev {
			if p.Name == out[i].Name { // the last of the name counts
				out[i].PodInterfaceName = p.PodInterfaceName
			}
		}
	}
	return out, nil
}

// StatusPodIPs reads the pod IPs of each interface of vmi from phase1's
// records in store, for [StatusInput.PodIPs]: the pod link's first global
// IPv4 and IPv6 address, the pod's primary family first, as phase1
// recorded them; a bridge interface shows its IPv4 address only (the VM
// gets no IPv6 address over the bridge: KubeVirt v1.9.0 drops it too). An
// interface phase1 has no record of shows none.
func StatusPodIPs(ctx context.Context, vmi *api.VMI, store *cache.Store) (map[string][]string, error) {
	out := map[string][]string{}
	for _, iface := range vmi.Spec.Domain.Devices.Interfaces {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p, err := store.ReadProgress(vmi.Metadata.UID, iface.Name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("interface %s: %w", iface.Name, err)
		}
		var ips []string
		for _, ip := range p.PodIPs {
			if iface.Bridge == nil || ip.Is4() {
				ips = append(ips, ip.String())
			}
		}
		if len(ips) > 0 {
			out[iface.Name] = ips
		}
	}
	return out, nil
}

// mergeGuestIPs merges the guest agent's addresses into an entry, family
// by family: the agent's replace the entry's when the entry has none of
// that family or the agent reports none of it (the guest is then not
// reachable on it); IPv4 first.
func mergeGuestIPs(s *api.InterfaceStatus, guest []string) {
	have4, have6 := splitFamilies(s.IPs)
	g4, g6 := splitFamilies(guest)
	if len(have4) == 0 || len(g4) == 0 {
		have4 = g4
	}
	if len(have6) == 0 || len(g6) == 0 {
		have6 = g6
	}
	setIPs(s, slices.Concat(have4, have6))
}

// setIPs sets an entry's addresses and its main one, the first.
func setIPs(s *api.InterfaceStatus, ips []string) {
	s.IPs, s.IP = ips, ""
	if len(ips) > 0 {
		s.IP = ips[0]
	}
}

// splitFamilies splits addresses into IPv4 and IPv6 ones; what does not
// parse is dropped.
func splitFamilies(ips []string) (v4, v6 []string) {
	for _, ip := range ips {
		a, err := netip.ParseAddr(ip)
		switch {
		case err != nil:
		case a.Unmap().Is4():
			v4 = append(v4, ip)
		default:
			v6 = append(v6, ip)
		}
	}
	return v4, v6
}

func byName(s []api.InterfaceStatus, name string) *api.InterfaceStatus {
	return entry(s, func(e api.InterfaceStatus) bool { return e.Name == name })
}

// entry is the first entry of s that match accepts, or nil.
func entry(s []api.InterfaceStatus, match func(api.InterfaceStatus) bool) *api.InterfaceStatus {
	if i := slices.IndexFunc(s, match); i >= 0 {
		return &s[i]
	}
	return nil
}

func hasInfoSource(list, src string) bool {
	return slices.Contains(strings.Split(list, infoSourceSep), src)
}

func addInfoSource(list, src string) string {
	if list == "" {
		return src
	}
	if hasInfoSource(list, src) {
		return list
	}
	return list + infoSourceSep + src
}

// statusDomain is the part of a domain's XML that [Status] reads.
type statusDomain struct {
	Devices struct {
		Interfaces []struct {
			Alias struct {
				Name string `xml:"name,attr"`
			} `xml:"alias"`
			MAC struct {
				Address string `xml:"address,attr"`
			} `xml:"mac"`
			Driver struct {
				Queues *uint32 `xml:"queues,attr"`
			} `xml:"driver"`
			Link *struct {
				State string `xml:"state,attr"`
			} `xml:"link"`
		} `xml:"interface"`
		HostDevs []struct {
			Alias struct {
				Name string `xml:"name,attr"`
			} `xml:"alias"`
		} `xml:"hostdev"`
	} `xml:"devices"`
}

// guestAgentInterface is one interface of qemu-guest-agent's
// guest-network-get-interfaces reply.
type guestAgentInterface struct {
	Name      string `json:"name"`
	MAC       string `json:"hardware-address"`
	Addresses []struct {
		Type    string `json:"ip-address-type"`
		Address string `json:"ip-address"`
		Prefix  int    `json:"prefix"`
	} `json:"ip-addresses"`
}

// ips are the interface's addresses in the agent's order.
func (g guestAgentInterface) ips() []string {
	var out []string
	for _, a := range g.Addresses {
		out = append(out, a.Address)
	}
	return out
}

// firstIP is the interface's main address: its first IPv4 one, else its
// first one.
func (g guestAgentInterface) firstIP() string {
	for _, a := range g.Addresses {
		if a.Type == "ipv4" {
			return a.Address
		}
	}
	if len(g.Addresses) > 0 {
		return g.Addresses[0].Address
	}
	return ""
}
