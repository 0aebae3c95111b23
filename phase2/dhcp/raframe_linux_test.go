package dhcp

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/mdlayher/ndp"
	"github.com/stretchr/testify/require"
)

// TestSharedRouterAdvertisement: on the bridge binding's shared bridge the
// advertisement is the pod's router's: the router's lifetime only when
// phase1 found the router, no source link-layer address (the guest asks
// the router itself), the prefix the pod had on-link and no other (never
// for SLAAC), the MTU and the search list; and it travels as an Ethernet
// frame to the VM's MAC from the router's link-local address with hop
// limit 255 and a valid checksum.
func TestSharedRouterAdvertisement(t *testing.T) {
	router := netip.MustParseAddr("fe80::b8:a3ff:fe15:14bf")
	onLink := netip.MustParsePrefix("fd00:10:244:3::/64")
	for _, tc := range []struct {
		name         string
		router       netip.Addr
		onLink       netip.Prefix
		wantLifetime time.Duration
		wantPrefix   netip.Prefix
	}{
		{"bridge plugin: router and on-link prefix", router, onLink, routerLifetime, onLink},
		{"ptp: router, nothing on-link", router, netip.Prefix{}, routerLifetime, netip.Prefix{}},
		{"no router found: lifetime 0", netip.Addr{}, netip.Prefix{}, 0, netip.Prefix{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := bridgeRecord()
			rec.IPv6, rec.GatewayIPv6, rec.RouterIPv6, rec.OnLinkIPv6 = netip.MustParsePrefix("fd00:10:244:3::2/128"), netip.MustParseAddr("fd00:10:244:3::1"), tc.router, tc.onLink
			c, err := NewConfig(testVMI(), nil, rec, []byte(podResolvConf))
			require.NoError(t, err)
			require.True(t, c.IPv6.Shared)
			ra := RouterAdvertisement(c, net.HardwareAddr{2, 0, 0, 0, 0, 1})
			require.True(t, ra.ManagedConfiguration)
			require.Equal(t, tc.wantLifetime, ra.RouterLifetime)
			var prefixes []netip.Prefix
			for _, o := range ra.Options {
				switch o := o.(type) {
				case *ndp.LinkLayerAddress:
					t.Fatalf("a source link-layer address in the router's name: %v", o)
				case *ndp.PrefixInformation:
					require.True(t, o.OnLink)
					require.False(t, o.AutonomousAddressConfiguration, "never a prefix for SLAAC")
					prefixes = append(prefixes, netip.PrefixFrom(o.Prefix, int(o.PrefixLength)))
				case *ndp.MTU:
					require.Equal(t, uint32(c.MTU), o.MTU)
				}
			}
			if tc.wantPrefix.IsValid() {
				require.Equal(t, []netip.Prefix{tc.wantPrefix}, prefixes)
			} else {
				require.Empty(t, prefixes)
			}

			src := router
			if !tc.wantPrefix.IsValid() && !tc.router.IsValid() {
				src = netip.MustParseAddr("fe80::1")
			}
			bridgeMAC, vmMAC := net.HardwareAddr{2, 0, 0, 0, 0, 1}, c.MAC
			f, err := raFrame(ra, src, bridgeMAC, vmMAC)
			require.NoError(t, err)
			require.Equal(t, []byte(vmMAC), f[0:6], "to the VM's MAC only")
			require.Equal(t, []byte(bridgeMAC), f[6:12])
			require.Equal(t, uint16(0x86dd), binary.BigEndian.Uint16(f[12:14]))
			ip := f[14:54]
			require.Equal(t, byte(0x60), ip[0])
			require.Equal(t, byte(58), ip[6])
			require.Equal(t, byte(255), ip[7], "hop limit 255, or the guest drops it")
			require.Equal(t, src.AsSlice(), ip[8:24])
			require.Equal(t, allNodes.AsSlice(), ip[24:40])
			body := f[54:]
			require.Equal(t, int(binary.BigEndian.Uint16(ip[4:6])), len(body))
			require.Equal(t, uint16(0xffff), icmp6Sum(src, allNodes, body), "ICMPv6 checksum")
			m, err := ndp.ParseMessage(body)
			require.NoError(t, err)
			require.Equal(t, ra, m)
		})
	}
}

// icmp6Sum is the ones'-complement sum of body with the IPv6
// pseudo-header: 0xffff when body's checksum is right.
func icmp6Sum(src, dst netip.Addr, body []byte) uint16 {
	var b []byte
	s, d := src.As16(), dst.As16()
	b = append(b, s[:]...)
	b = append(b, d[:]...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(body)))
	b = append(b, 0, 0, 0, 58)
	b = append(b, body...)
	if len(b)%2 == 1 {
		b = append(b, 0)
	}
	var sum uint32
	for i := 0; i < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return uint16(sum)
}
