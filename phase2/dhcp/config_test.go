package dhcp

import (
	"errors"
	"net/netip"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
)

const podResolvConf = `# pod resolv.conf
search default.svc.cluster.local svc.cluster.local cluster.local
nameserver 10.96.0.10
nameserver fd00::10
options ndots:5
`

func bridgeRecord() *cache.Interface {
	return &cache.Interface{
		Version: cache.Version, Interface: "default", PodInterface: "eth0", Binding: api.BindingBridge,
		Bridge: "k6t-eth0", MAC: cache.MustParseMAC("02:42:ac:10:00:18"), MTU: 1440,
		IPv4: netip.MustParsePrefix("10.244.1.7/24"), Gateway: netip.MustParseAddr("10.244.1.1"), ServerIPv4: netip.MustParseAddr("169.254.75.10"),
	}
}

func masqRecord() *cache.Interface {
	return &cache.Interface{
		Version: cache.Version, Interface: "default", PodInterface: "eth0", Binding: api.BindingMasquerade,
		Bridge: "k6t-eth0", MTU: 1500,
		IPv4: netip.MustParsePrefix("10.0.2.2/24"), Gateway: netip.MustParseAddr("10.0.2.1"), ServerIPv4: netip.MustParseAddr("10.0.2.1"),
		IPv6: netip.MustParsePrefix("fd10:0:2::2/120"), GatewayIPv6: netip.MustParseAddr("fd10:0:2::1"), ServerIPv6: netip.MustParseAddr("fd10:0:2::1"),
	}
}

func testVMI() *api.VMI {
	return &api.VMI{Metadata: api.ObjectMeta{Name: "testvmi", Namespace: "default"}}
}

func TestNewConfig(t *testing.T) {
	for _, tc := range []struct {
		name   string
		vmi    func(*api.VMI)
		iface  *api.Interface
		rec    func(*cache.Interface)
		resolv string
		check  func(t *testing.T, c *Config)
	}{{
		name: "bridge", resolv: podResolvConf,
		check: func(t *testing.T, c *Config) {
			require.Equal(t, "k6t-eth0", c.Bridge)
			require.Equal(t, "02:42:ac:10:00:18", c.MAC.String())
			require.Equal(t, netip.MustParsePrefix("10.244.1.7/24"), c.Address)
			require.Equal(t, netip.MustParseAddr("10.244.1.1"), c.Router)
			require.Equal(t, netip.MustParseAddr("169.254.75.10"), c.ServerID)
			require.Equal(t, uint16(1440), c.MTU)
			require.Equal(t, InfiniteLease, c.Lease)
			require.Equal(t, []netip.Addr{netip.MustParseAddr("10.96.0.10")}, c.DNS)
			require.Equal(t, []string{"default.svc.cluster.local", "svc.cluster.local", "cluster.local"}, c.Search)
			require.Equal(t, "default.svc.cluster.local", c.DomainName)
			require.Equal(t, "testvmi", c.Hostname)
			require.Nil(t, c.Routes)
			require.Nil(t, c.IPv6)
		},
	}, {
		name: "defaults without resolv.conf", resolv: "",
		check: func(t *testing.T, c *Config) {
			require.Equal(t, []netip.Addr{netip.MustParseAddr("8.8.8.8")}, c.DNS)
			require.Equal(t, []string{"cluster.local"}, c.Search)
			require.Equal(t, "cluster.local", c.DomainName)
		},
	}, {
		name: "subdomain prepended to longest svc domain", resolv: podResolvConf,
		vmi: func(v *api.VMI) { v.Spec.Subdomain = "mysub"; v.Spec.Hostname = "myhost" },
		check: func(t *testing.T, c *Config) {
			require.Equal(t, []string{"mysub.default.svc.cluster.local", "default.svc.cluster.local", "svc.cluster.local", "cluster.local"}, c.Search)
			require.Equal(t, "mysub.default.svc.cluster.local", c.DomainName)
			require.Equal(t, "myhost", c.Hostname)
		},
	}, {
		name: "hostname cut at dot", vmi: func(v *api.VMI) { v.Metadata.Name = "vm.example.org" },
		check: func(t *testing.T, c *Config) { require.Equal(t, "vm", c.Hostname) },
	}, {
		name: "hostname cut at 63", vmi: func(v *api.VMI) { v.Metadata.Name = string(make63x('a', 70)) },
		check: func(t *testing.T, c *Config) { require.Equal(t, string(make63x('a', 63)), c.Hostname) },
	}, {
		name: "routes: default last, on-link gateway zero",
		rec: func(r *cache.Interface) {
			r.Routes = []cache.Route{
				{Dst: netip.MustParsePrefix("0.0.0.0/0"), Gateway: netip.MustParseAddr("10.244.1.1")},
				{Dst: netip.MustParsePrefix("10.244.1.0/24")},
				{Dst: netip.MustParsePrefix("fd00::/64")},
				{Dst: netip.MustParsePrefix("192.168.0.0/16"), Gateway: netip.MustParseAddr("10.244.1.254")},
			}
		},
		check: func(t *testing.T, c *Config) {
			require.Equal(t, []Route{
				{netip.MustParsePrefix("10.244.1.0/24"), netip.MustParseAddr("0.0.0.0")},
				{netip.MustParsePrefix("192.168.0.0/16"), netip.MustParseAddr("10.244.1.254")},
				{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParseAddr("10.244.1.1")},
			}, c.Routes)
			require.Len(t, c.Ignored, 1)
		},
	}, {
		// The pod link had its connected route and a default route.
		name: "one route: option 121 with it",
		rec: func(r *cache.Interface) {
			r.Routes = []cache.Route{{Dst: netip.MustParsePrefix("0.0.0.0/0"), Gateway: netip.MustParseAddr("10.244.1.1")}}
		},
		check: func(t *testing.T, c *Config) {
			require.Equal(t, []Route{{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParseAddr("10.244.1.1")}}, c.Routes)
		},
	}, {
		// A secondary network with one static route and no default
		// route: option 121 with that route, no option 3.
		name: "static route only: no router",
		rec: func(r *cache.Interface) {
			r.Gateway = netip.Addr{}
			r.Routes = []cache.Route{{Dst: netip.MustParsePrefix("192.168.0.0/16"), Gateway: netip.MustParseAddr("192.168.1.1")}}
		},
		check: func(t *testing.T, c *Config) {
			require.False(t, c.Router.IsValid())
			require.Equal(t, []Route{{netip.MustParsePrefix("192.168.0.0/16"), netip.MustParseAddr("192.168.1.1")}}, c.Routes)
		},
	}, {
		// ptp's routing (the VM's address is a /32): the gateway's
		// on-link route comes before the route through it.
		name: "ptp: on-link routes first",
		rec: func(r *cache.Interface) {
			r.IPv4 = netip.MustParsePrefix("10.244.2.2/32")
			r.Routes = []cache.Route{
				{Dst: netip.MustParsePrefix("0.0.0.0/0"), Gateway: netip.MustParseAddr("10.244.2.1")},
				{Dst: netip.MustParsePrefix("10.244.2.0/24"), Gateway: netip.MustParseAddr("10.244.2.1")},
				{Dst: netip.MustParsePrefix("10.244.2.1/32")},
			}
		},
		check: func(t *testing.T, c *Config) {
			require.Equal(t, []Route{
				{netip.MustParsePrefix("10.244.2.1/32"), netip.MustParseAddr("0.0.0.0")},
				{netip.MustParsePrefix("10.244.2.0/24"), netip.MustParseAddr("10.244.2.1")},
				{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParseAddr("10.244.2.1")},
			}, c.Routes)
		},
	}, {
		// IPAM without a gateway (host-local without "gateway"): the
		// address alone.
		name: "no routes: no router, no option 121",
		rec:  func(r *cache.Interface) { r.Gateway, r.Routes = netip.Addr{}, nil },
		check: func(t *testing.T, c *Config) {
			require.False(t, c.Router.IsValid())
			require.Nil(t, c.Routes)
		},
	}, {
		name: "dhcpOptions",
		iface: &api.Interface{Name: "default", Bridge: &struct{}{}, DHCPOptions: &api.DHCPOptions{
			BootFileName: "pxelinux.0", TFTPServerName: "tftp.example.org",
			NTPServers:     []string{"10.0.0.5", "10.0.0.6"},
			PrivateOptions: []api.DHCPPrivateOption{{Option: 240, Value: "extra"}, {Option: 254, Value: "x"}},
		}},
		check: func(t *testing.T, c *Config) {
			require.Equal(t, "pxelinux.0", c.BootFileName)
			require.Equal(t, "tftp.example.org", c.TFTPServerName)
			require.Equal(t, []netip.Addr{netip.MustParseAddr("10.0.0.5"), netip.MustParseAddr("10.0.0.6")}, c.NTPServers)
			require.Equal(t, []PrivateOption{{240, "extra"}, {254, "x"}}, c.Private)
		},
	}, {
		name: "invalid search domain skipped", resolv: "search good.local bad_domain.local -x.local\n",
		check: func(t *testing.T, c *Config) {
			require.Equal(t, []string{"good.local"}, c.Search)
			require.Len(t, c.Ignored, 2)
		},
	}, {
		name: "masquerade with IPv6, any MAC",
		rec:  func(r *cache.Interface) { *r = *masqRecord() },
		check: func(t *testing.T, c *Config) {
			require.Nil(t, c.MAC)
			require.NotNil(t, c.IPv6)
			require.Equal(t, netip.MustParsePrefix("fd10:0:2::2/120"), c.IPv6.Address)
			require.Equal(t, netip.MustParseAddr("fd10:0:2::1"), c.IPv6.Gateway)
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			vmi, rec := testVMI(), bridgeRecord()
			if tc.vmi != nil {
				tc.vmi(vmi)
			}
			if tc.rec != nil {
				tc.rec(rec)
			}
			c, err := NewConfig(vmi, tc.iface, rec, []byte(tc.resolv))
			require.NoError(t, err)
			tc.check(t, c)
		})
	}
}

func make63x(b byte, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}

func TestNewConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rec   func(*cache.Interface)
		iface *api.Interface
		field string
		is    error
	}{
		{name: "ipam disabled", rec: func(r *cache.Interface) { r.IPAMDisabled = true }, is: ErrIPAMDisabled},
		{name: "no ipv4", rec: func(r *cache.Interface) { r.IPv4 = netip.Prefix{} }, is: ErrIPAMDisabled},
		{name: "ipv6 as ipv4", rec: func(r *cache.Interface) { r.IPv4 = netip.MustParsePrefix("fd00::1/64") }, field: "IPv4"},
		{name: "ipv6 gateway", rec: func(r *cache.Interface) { r.Gateway = netip.MustParseAddr("fe80::1") }, field: "Gateway"},
		{name: "no server id", rec: func(r *cache.Interface) { r.ServerIPv4 = netip.Addr{} }, field: "ServerIPv4"},
		{name: "bridge without mac", rec: func(r *cache.Interface) { r.MAC = cache.MAC{} }, field: "MAC"},
		{name: "no bridge", rec: func(r *cache.Interface) { r.Bridge = "" }, field: "Bridge"},
		{name: "sriov", rec: func(r *cache.Interface) { r.Binding = api.BindingSRIOV }, field: "Binding"},
		{name: "mtu", rec: func(r *cache.Interface) { r.MTU = 20 }, field: "MTU"},
		{name: "route dst", rec: func(r *cache.Interface) { r.Routes = []cache.Route{{Dst: netip.Prefix{}}} }, field: "Routes[0].dst"},
		{name: "route gw", rec: func(r *cache.Interface) {
			r.Routes = []cache.Route{{Dst: netip.MustParsePrefix("1.2.3.0/24"), Gateway: netip.MustParseAddr("fe80::1")}}
		}, field: "Routes[0].gateway"},
		{name: "ipv6", rec: func(r *cache.Interface) { *r = *masqRecord(); r.IPv6 = netip.MustParsePrefix("10.0.0.1/24") }, field: "IPv6"},
		{name: "ntp ipv6", iface: &api.Interface{DHCPOptions: &api.DHCPOptions{NTPServers: []string{"10.0.0.1", "fd00::1"}}}, field: "dhcpOptions.ntpServers[1]"},
		{name: "64 ntp servers", iface: &api.Interface{DHCPOptions: &api.DHCPOptions{NTPServers: slices.Repeat([]string{"10.0.0.1"}, api.MaxNTPServers+1)}}, field: "dhcpOptions.ntpServers"},
		{name: "private option range", iface: &api.Interface{DHCPOptions: &api.DHCPOptions{PrivateOptions: []api.DHCPPrivateOption{{Option: 223}}}}, field: "dhcpOptions.privateOptions[0].option"},
		{name: "private option twice", iface: &api.Interface{DHCPOptions: &api.DHCPOptions{PrivateOptions: []api.DHCPPrivateOption{{Option: 224}, {Option: 224}}}}, field: "dhcpOptions.privateOptions[1].option"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := bridgeRecord()
			if tc.rec != nil {
				tc.rec(rec)
			}
			_, err := NewConfig(testVMI(), tc.iface, rec, nil)
			require.Error(t, err)
			if tc.is != nil {
				require.ErrorIs(t, err, tc.is)
				return
			}
			var fe *FieldError
			require.True(t, errors.As(err, &fe), "%T %v", err, err)
			require.Equal(t, tc.field, fe.Field)
			require.ErrorIs(t, err, ErrInvalidConfig)
		})
	}
}

func TestNewConfigSearchTooLong(t *testing.T) {
	resolv := "search"
	for i := range 12 {
		resolv += " " + string(make63x(byte('a'+i), 20)) + ".example.org"
	}
	_, err := NewConfig(testVMI(), nil, bridgeRecord(), []byte(resolv))
	var fe *FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "resolv.conf search", fe.Field)
}

func TestParseResolvConf(t *testing.T) {
	rc := ParseResolvConf([]byte("nameserver 1.1.1.1 # c\nnameserver 1.1.1.1\n;x\nsearch A.Example. b.example\nsearch c.example a.example\nnameserver ::1\ndomain z\n"))
	require.Equal(t, []netip.Addr{netip.MustParseAddr("1.1.1.1"), netip.MustParseAddr("::1")}, rc.Nameservers)
	require.Equal(t, []string{"a.example", "b.example", "c.example"}, rc.Search)

	// IPv6 nameservers are kept in order (an IPv6-only pod has only
	// those); zoned link-local ones, "::" and duplicates are not; an
	// IPv4-mapped address counts as IPv4.
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"ipv6 only", "nameserver fd00:10:96::a\nnameserver fd00:10:96::b\n", []string{"fd00:10:96::a", "fd00:10:96::b"}},
		{"dual stack order kept", "nameserver fd00::10\nnameserver 10.96.0.10\n", []string{"fd00::10", "10.96.0.10"}},
		{"zoned and unspecified dropped", "nameserver fe80::1%eth0\nnameserver ::\nnameserver fd00::1\n", []string{"fd00::1"}},
		{"mapped is ipv4, duplicates dropped", "nameserver ::ffff:10.0.0.1\nnameserver 10.0.0.1\n", []string{"10.0.0.1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, a := range ParseResolvConf([]byte(tc.in)).Nameservers {
				got = append(got, a.String())
			}
			require.Equal(t, tc.want, got)
		})
	}
}

// TestNewConfigDNS6: the pod's IPv6 nameservers reach the IPv6 part of the
// configuration (DHCPv6 option 23, RDNSS) and only IPv4 ones reach option
// 6; an IPv6-only pod's resolv.conf gives the IPv6-only VM its DNS.
func TestNewConfigDNS6(t *testing.T) {
	c, err := NewConfig(testVMI(), nil, masqRecord(), []byte(podResolvConf))
	require.NoError(t, err)
	require.Equal(t, []netip.Addr{netip.MustParseAddr("10.96.0.10")}, c.DNS)
	require.Equal(t, []netip.Addr{netip.MustParseAddr("fd00::10")}, c.IPv6.DNS)

	rec := masqRecord()
	rec.IPv4, rec.Gateway, rec.ServerIPv4 = netip.Prefix{}, netip.Addr{}, netip.Addr{}
	c, err = NewConfig(testVMI(), nil, rec, []byte("search ns.svc.cluster.local\nnameserver fd00:10:96::a\n"))
	require.NoError(t, err)
	require.Equal(t, []netip.Addr{netip.MustParseAddr("fd00:10:96::a")}, c.IPv6.DNS)
	require.Equal(t, []string{"ns.svc.cluster.local"}, c.Search)
}

func TestWithSubdomain(t *testing.T) {
	for _, tc := range []struct {
		name, sub string
		in, want  []string
	}{
		{"none", "", []string{"a.svc.cluster.local"}, []string{"a.svc.cluster.local"}},
		{"no svc domain", "s", []string{"cluster.local"}, []string{"cluster.local"}},
		{"longest svc", "s", []string{"svc.cluster.local", "ns.svc.cluster.local"}, []string{"s.ns.svc.cluster.local", "svc.cluster.local", "ns.svc.cluster.local"}},
		{"already there", "s", []string{"s.ns.svc.cluster.local", "ns.svc.cluster.local"}, []string{"s.ns.svc.cluster.local", "ns.svc.cluster.local"}},
	} {
		t.Run(tc.name, func(t *testing.T) { require.Equal(t, tc.want, WithSubdomain(tc.in, tc.sub)) })
	}
}

// TestNewConfigFor: what is served follows the Service the binding asks
// for, not its name: an outside binding's record is served as asked.
func TestNewConfigFor(t *testing.T) {
	custom := func() *cache.Interface {
		r := masqRecord()
		r.Binding = "example-tap"
		return r
	}
	for _, tc := range []struct {
		name    string
		rec     *cache.Interface
		svc     Service
		wantErr string
		check   func(t *testing.T, c *Config)
	}{
		{"outside binding, DHCPv4 only", custom(), Service{IPv4: true}, "", func(t *testing.T, c *Config) {
			require.Equal(t, "10.0.2.2/24", c.Address.String())
			require.Nil(t, c.MAC, "no MAC: any client on the bridge")
			require.Nil(t, c.IPv6)
			require.Contains(t, c.Ignored, `IPv6 "fd10:0:2::2/120": the example-tap binding asks for no DHCPv6`)
		}},
		{"outside binding, both families", custom(), Service{IPv4: true, IPv6: true}, "", func(t *testing.T, c *Config) {
			require.NotNil(t, c.IPv6)
			require.Equal(t, "fd10:0:2::2/120", c.IPv6.Address.String())
		}},
		{"IPv6 only asked for", custom(), Service{IPv6: true}, "", func(t *testing.T, c *Config) {
			require.False(t, c.Address.IsValid(), "no DHCPv4 address")
			require.NotNil(t, c.IPv6)
		}},
		{"MAC required and missing", custom(), Service{IPv4: true, RequireMAC: true}, `MAC "": the VM's MAC is required`, nil},
		{"nothing asked for", custom(), Service{}, `Service "none"`, nil},
		{"bridge's service on the bridge record", bridgeRecord(), CoreService(api.BindingBridge), "", func(t *testing.T, c *Config) {
			require.Equal(t, "02:42:ac:10:00:18", c.MAC.String())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewConfigFor(testVMI(), nil, tc.rec, nil, tc.svc)
			if tc.wantErr != "" {
				var fe *FieldError
				require.ErrorAs(t, err, &fe)
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			tc.check(t, c)
		})
	}
}
