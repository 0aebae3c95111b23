package dhcp

import (
	"bufio"
	"bytes"
	"net/netip"
	"slices"
	"strings"
)

// ResolvConf is what the DHCP server takes from the pod's resolv.conf.
type ResolvConf struct {
	// Nameservers are the nameserver lines of both families, in order,
	// without duplicates and without zoned (link-local) IPv6 addresses,
	// which mean nothing to the VM. IPv4 ones go to DHCPv4 option 6, IPv6
	// ones to DHCPv6 option 23 and router advertisements (RDNSS).
	Nameservers []netip.Addr
	// Search are the domains of every search line, lower-cased, without a
	// trailing dot and without duplicates.
	Search []string
}

// ParseResolvConf reads nameserver and search lines of a resolv.conf;
// everything else (options, domain, comments) is ignored.
func ParseResolvConf(b []byte) ResolvConf {
	var rc ResolvConf
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexAny(line, "#;"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "nameserver":
			a, err := netip.ParseAddr(f[1])
			if err != nil || a.Zone() != "" || a.IsUnspecified() {
				continue
			}
			a = a.Unmap()
			if !slices.Contains(rc.Nameservers, a) {
				rc.Nameservers = append(rc.Nameservers, a)
			}
		case "search":
			for _, d := range f[1:] {
				d = strings.TrimSuffix(strings.ToLower(d), ".")
				if d != "" && !slices.Contains(rc.Search, d) {
					rc.Search = append(rc.Search, d)
				}
			}
		}
	}
	return rc
}
