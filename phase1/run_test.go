package phase1_test

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/virtnet/virtnet/netdriver/netdrivertest"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/netdriver"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/testrig/testutil"
	"github.com/virtnet/virtnet/testrig/testutil/phase1test"
)

const uid = "6f4c5d2e-1b3a-4c5d-9e8f-0a1b2c3d4e5f"

const bridgeVMI = `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: vmi-bridge, namespace: default, uid: ` + uid + `}
spec:
  domain:
    devices:
      interfaces: [{name: default, bridge: {}}]
  networks: [{name: default, pod: {}}]
`

const masqueradeVMI = `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: vmi-masq, namespace: default, uid: ` + uid + `}
spec:
  domain:
    devices:
      interfaces:
      - name: default
        masquerade: {}
        ports: [{name: http, port: 80}, {port: 53, protocol: UDP}]
  networks: [{name: default, pod: {}}]
`

const threeVMI = `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: vmi-three, namespace: default, uid: ` + uid + `}
spec:
  domain:
    cpu: {cores: 2}
    devices:
      networkInterfaceMultiqueue: true
      interfaces:
      - {name: default, masquerade: {}}
      - {name: blue, bridge: {}}
      - {name: red, bridge: {}}
  networks:
  - {name: default, pod: {}}
  - {name: blue, multus: {networkName: blue-net}}
  - {name: red, multus: {networkName: red-net}}
`

// threeInterfaces is a VMI with masquerade and two bridges, one without
// IPAM.
var threeInterfaces = phase1test.Scenario{Name: "three-interfaces", VMI: threeVMI, MinCalls: 6,
	Links: []netdrivertest.SimLink{{Name: "eth0"}, {Name: "net1"}, {Name: "net2", NoIPAM: true}}}

func run(t testing.TB, vmi *api.VMI, f *netdrivertest.Fake, s *cache.Store, opts phase1.Options) error {
	t.Helper()
	opts.Driver = f
	return phase1.Run(context.Background(), vmi, "", s, opts)
}

func TestRunBridgeState(t *testing.T) {
	vmi := testutil.LoadVMI(t, bridgeVMI)
	f := netdrivertest.SimulatedPod(netdrivertest.SimLink{Name: "eth0"})
	podMAC, _ := cache.MACFrom(mustLink(t, f, "eth0").MAC)
	s := testutil.NewStore(t)
	require.NoError(t, run(t, vmi, f, s, phase1.Options{}))

	dummy := mustLink(t, f, "eth0")
	require.Equal(t, netdriver.TypeDummy, dummy.Type)
	require.True(t, dummy.NoARP)
	require.False(t, dummy.Up)
	requireAddrs(t, f, "eth0", "10.244.1.7/24")

	nic := mustLink(t, f, "eth0-nic")
	require.Equal(t, netdriver.TypeVeth, nic.Type)
	require.Equal(t, "k6t-eth0", nic.Master)
	require.True(t, nic.Up)
	learning, err := f.Learning("eth0-nic")
	require.NoError(t, err)
	require.False(t, learning, "MAC learning off on the pod NIC")
	requireAddrs(t, f, "eth0-nic")

	br := mustLink(t, f, "k6t-eth0")
	require.Equal(t, netdriver.TypeBridge, br.Type)
	require.Equal(t, br.MAC.String(), nic.MAC.String(), "the pod NIC takes the bridge's MAC")
	require.Equal(t, 1440, br.MTU)
	requireAddrs(t, f, "k6t-eth0", "169.254.75.10/32")
	on, err := f.TXChecksum("k6t-eth0")
	require.NoError(t, err)
	require.False(t, on)

	tap := mustLink(t, f, "tap0")
	require.Equal(t, netdriver.TypeTuntap, tap.Type)
	require.Equal(t, "k6t-eth0", tap.Master)
	require.Equal(t, 0, tap.TapOwner, "a root VMI's tap is root's (v0.53)")
	require.Equal(t, 1440, tap.MTU)
	require.True(t, tap.Up)
	v, _ := f.Sysctl("ipv4/conf/all/arp_ignore")
	require.Equal(t, "1", v)

	rec, err := s.ReadInterface(uid, "default")
	require.NoError(t, err)
	require.Equal(t, &cache.Interface{
		Version: cache.Version, Interface: "default", PodInterface: "eth0", Binding: "bridge",
		Bridge: "k6t-eth0", Tap: "tap0", NIC: "eth0-nic", MAC: podMAC, MTU: 1440,
		IPv4: netip.MustParsePrefix("10.244.1.7/24"), Gateway: netip.MustParseAddr("10.244.1.1"), ServerIPv4: netip.MustParseAddr("169.254.75.10"),
		Routes: []cache.Route{{Dst: netip.MustParsePrefix("0.0.0.0/0"), Gateway: netip.MustParseAddr("10.244.1.1")}},
	}, rec)
	pod, err := s.ReadProgress(uid, "default")
	require.NoError(t, err)
	require.Equal(t, cache.Finished, pod.State)
	require.Equal(t, []string{"10.244.1.7"}, addrTexts(pod.PodIPs))
}

func TestRunMasqueradeState(t *testing.T) {
	vmi := testutil.LoadVMI(t, masqueradeVMI)
	f := netdrivertest.SimulatedPod(netdrivertest.SimLink{Name: "eth0"})
	s := testutil.NewStore(t)
	require.NoError(t, run(t, vmi, f, s, phase1.Options{}))
	pod := mustLink(t, f, "eth0")
	require.Equal(t, netdriver.TypeVeth, pod.Type, "masquerade leaves the pod link alone")
	requireAddrs(t, f, "eth0", "10.244.1.7/24")
	br := mustLink(t, f, "k6t-eth0")
	require.Equal(t, "02:00:00:00:00:00", br.MAC.String())
	requireAddrs(t, f, "k6t-eth0", "10.0.2.1/24")
	require.Equal(t, "k6t-eth0", mustLink(t, f, "tap0").Master)
	rules, err := f.NATRules(netdriver.IPv4)
	require.NoError(t, err)
	require.Contains(t, rules, "postrouting: ip saddr 10.0.2.2 counter masquerade")
	for _, k := range []string{"ipv4/ip_forward", "ipv4/conf/k6t-eth0/route_localnet"} {
		v, _ := f.Sysctl(k)
		require.Equal(t, "1", v, k)
	}
	rec, err := s.ReadInterface(uid, "default")
	require.NoError(t, err)
	require.Equal(t, netip.MustParsePrefix("10.0.2.2/24"), rec.IPv4)
	require.Equal(t, netip.MustParseAddr("10.0.2.1"), rec.Gateway)
	require.NotEqual(t, cache.MustParseMAC("02:00:00:00:00:00"), rec.MAC)
	hw := rec.MAC.HardwareAddr()
	require.Equal(t, byte(2), hw[0]&3, "a locally administered unicast MAC")
}

func TestRunThreeInterfaces(t *testing.T) {
	vmi := testutil.LoadVMI(t, threeVMI)
	f := netdrivertest.SimulatedPod(netdrivertest.SimLink{Name: "eth0"}, netdrivertest.SimLink{Name: "net1"}, netdrivertest.SimLink{Name: "net2", NoIPAM: true})
	s := testutil.NewStore(t)
	require.NoError(t, run(t, vmi, f, s, phase1.Options{}))
	requireAddrs(t, f, "k6t-eth0", "10.0.2.1/24")
	requireAddrs(t, f, "k6t-net1", "169.254.75.11/32")
	requireAddrs(t, f, "k6t-net2", "169.254.75.12/32")
	require.Equal(t, netdriver.TypeDummy, mustLink(t, f, "net1").Type)
	require.Equal(t, netdriver.TypeVeth, mustLink(t, f, "net2").Type, "no IPAM: no rename, no dummy")
	require.Equal(t, "k6t-net2", mustLink(t, f, "net2").Master)
	for _, tap := range []string{"tap0", "tap1", "tap2"} {
		l := mustLink(t, f, tap)
		require.True(t, l.TapMultiQueue, tap)
	}
	red, err := s.ReadInterface(uid, "red")
	require.NoError(t, err)
	require.True(t, red.IPAMDisabled)
	require.Equal(t, 2, red.Queues)
	blue, err := s.ReadInterface(uid, "blue")
	require.NoError(t, err)
	require.Empty(t, blue.Gateway, "net1 has no default route: the VM gets none through it")
	require.Equal(t, []cache.Route{{Dst: netip.MustParsePrefix("10.100.1.0/24"), Gateway: netip.MustParseAddr("192.168.1.1")}}, blue.Routes)
}

// TestConverge: a VMI of several bindings converges (the cases of
// phase1test; each binding's package runs them for that binding alone).
func TestConverge(t *testing.T) {
	phase1test.Converge(t, threeInterfaces)
}

// isError makes a TestRunHostile row check errors.Is(err, target).
type isError struct{ target error }

func TestRunHostile(t *testing.T) {
	tests := []struct {
		name     string
		yaml     string
		links    []netdrivertest.SimLink
		extra    func(f *netdrivertest.Fake)
		store    func(t *testing.T) *cache.Store
		step     string
		as       any
		contains string
		// wide: the failure is VMI-wide (no interface named).
		wide bool
		// retryable: not [phase1.Error.Permanent] (every other row is).
		retryable bool
	}{
		{name: "missing pod link", yaml: bridgeVMI, links: []netdrivertest.SimLink{{Name: "eth9"}},
			step: phase1.StepDiscover, as: new(*binding.PodLinkError), contains: `"eth0"`},
		{name: "foreign bridge name", yaml: bridgeVMI, links: []netdrivertest.SimLink{{Name: "eth0"}, {Name: "k6t-eth0"}},
			step: phase1.StepPrepare, as: new(*binding.ForeignLinkError), contains: "k6t-eth0"},
		{name: "foreign tap name", yaml: masqueradeVMI, links: []netdrivertest.SimLink{{Name: "eth0"}},
			extra: func(f *netdrivertest.Fake) { require.NoError(t, f.AddDummy("tap0")) },
			step:  phase1.StepPrepare, as: new(*binding.ForeignLinkError), contains: "tap0"},
		{name: "masquerade gateway already on another link", yaml: masqueradeVMI, links: []netdrivertest.SimLink{{Name: "eth0"}, {Name: "other"}},
			extra: func(f *netdrivertest.Fake) {
				require.NoError(t, f.AddrReplace("other", netip.MustParsePrefix("10.0.2.1/24")))
			},
			step: phase1.StepPrepare, as: new(*binding.AddressInUseError), contains: `10.0.2.1 is already on link "other"`},
		{name: "bridge link-local address already on another link", yaml: bridgeVMI, links: []netdrivertest.SimLink{{Name: "eth0"}, {Name: "other"}},
			extra: func(f *netdrivertest.Fake) {
				require.NoError(t, f.AddrReplace("other", netip.MustParsePrefix("169.254.75.10/32")))
			},
			step: phase1.StepPrepare, as: new(*binding.AddressInUseError), contains: "169.254.75.10"},
		{name: "pod IP already on another link", yaml: bridgeVMI, links: []netdrivertest.SimLink{{Name: "eth0"}, {Name: "other"}},
			extra: func(f *netdrivertest.Fake) {
				require.NoError(t, f.AddrReplace("other", netip.MustParsePrefix("10.244.1.7/32")))
			},
			step: phase1.StepPrepare, as: new(*binding.AddressInUseError), contains: "10.244.1.7"},
		{name: "pod link is a dummy", yaml: bridgeVMI, links: []netdrivertest.SimLink{{Name: "eth0", Type: netdriver.TypeDummy}},
			step: phase1.StepDiscover, as: new(*binding.PodLinkError), contains: "dummy"},
		{name: "pod link carries phase1's mark", yaml: bridgeVMI, links: []netdrivertest.SimLink{{Name: "eth0"}},
			extra: func(f *netdrivertest.Fake) {
				require.NoError(t, f.AddAltName("eth0", binding.Mark(netdriver.TypeDummy, "another-vmi", "default")))
			},
			step: phase1.StepDiscover, as: &isError{binding.ErrPrepared}, contains: "mark"},
		{name: "pod link is a port of a k6t- bridge", yaml: masqueradeVMI, links: []netdrivertest.SimLink{{Name: "eth0"}},
			extra: func(f *netdrivertest.Fake) {
				require.NoError(t, f.AddBridge("k6t-old", 1500, nil))
				require.NoError(t, f.SetMaster("eth0", "k6t-old"))
			},
			step: phase1.StepDiscover, as: &isError{binding.ErrPrepared}, contains: "port of bridge k6t-old"},
		{name: "phase1's tap next to the pod link", yaml: masqueradeVMI, links: []netdrivertest.SimLink{{Name: "eth0"}},
			extra: func(f *netdrivertest.Fake) {
				require.NoError(t, f.AddTap(netdriver.Tap{Name: "tap0", Owner: 107, Group: 107}))
				require.NoError(t, f.AddAltName("tap0", binding.Mark(netdriver.TypeTuntap, uid, "default")))
			},
			step: phase1.StepDiscover, as: &isError{binding.ErrPrepared}, contains: "tap0"},
		{name: "renamed NIC next to the pod link", yaml: bridgeVMI, links: []netdrivertest.SimLink{{Name: "eth0"}, {Name: "eth0-nic"}},
			step: phase1.StepDiscover, as: &isError{binding.ErrPrepared}, contains: "eth0-nic"},
		{name: "masquerade without address", yaml: masqueradeVMI, links: []netdrivertest.SimLink{{Name: "eth0", NoIPAM: true}},
			step: phase1.StepPlan, contains: "no global address"},
		{name: "cache dir not writable", yaml: bridgeVMI, links: []netdrivertest.SimLink{{Name: "eth0"}},
			store: func(t *testing.T) *cache.Store {
				dir := t.TempDir()
				require.NoError(t, os.WriteFile(filepath.Join(dir, "file"), nil, 0o644))
				s, err := cache.New(filepath.Join(dir, "file", "cache"))
				require.NoError(t, err)
				return s
			},
			step: phase1.StepLock, contains: "file/cache", wide: true, retryable: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vmi := testutil.LoadVMI(t, tt.yaml)
			f := netdrivertest.SimulatedPod(tt.links...)
			if tt.extra != nil {
				tt.extra(f)
			}
			before := f.Snapshot()
			s := testutil.NewStore(t)
			if tt.store != nil {
				s = tt.store(t)
			}
			err := run(t, vmi, f, s, phase1.Options{})
			require.Error(t, err)
			var pe *phase1.Error
			require.ErrorAs(t, err, &pe)
			require.Equal(t, tt.step, pe.Step)
			if tt.wide {
				require.Empty(t, pe.Interface)
			} else {
				require.Equal(t, "default", pe.Interface)
				require.Contains(t, err.Error(), `interface "default"`)
			}
			require.Contains(t, err.Error(), tt.contains)
			require.Equal(t, !tt.retryable, pe.Permanent(), "permanent")
			switch as := tt.as.(type) {
			case nil:
			case *isError:
				require.ErrorIs(t, err, as.target)
				require.ErrorAs(t, err, new(*binding.PodLinkError))
			default:
				require.ErrorAs(t, err, as)
			}
			after := f.Snapshot()
			require.Equal(t, before.Links, after.Links, "nothing half-applied")
			require.Equal(t, before.Addrs, after.Addrs, "nothing half-applied")
		})
	}
}

// TestRunRejectsBadNamesBeforeKernel: a UID that cannot be a directory
// name is refused by Load; set after Load validated the VMI, the store
// still refuses it, before any kernel call.
func TestRunRejectsBadNamesBeforeKernel(t *testing.T) {
	_, err := api.Load([]byte(strings.Replace(bridgeVMI, "uid: "+uid, "uid: ../escape", 1)))
	fes := api.FieldErrors(err)
	require.Len(t, fes, 1, "%v", err)
	require.Equal(t, "metadata.uid", fes[0].Path)

	vmi := testutil.LoadVMI(t, bridgeVMI)
	vmi.Metadata.UID = "../escape"
	f := netdrivertest.SimulatedPod(netdrivertest.SimLink{Name: "eth0"})
	err = run(t, vmi, f, testutil.NewStore(t), phase1.Options{})
	var pe *phase1.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, phase1.StepLock, pe.Step)
	require.True(t, pe.Permanent())
	require.Empty(t, f.Calls())
}

// TestRunTakesValidatedVMIsOnly: phase1 does not validate again; a VMI
// that neither Load nor Validate passed is refused before anything else,
// and Validate makes it one phase1 takes.
func TestRunTakesValidatedVMIsOnly(t *testing.T) {
	vmi, err := api.Decode([]byte(bridgeVMI))
	require.NoError(t, err)
	api.SetDefaults(vmi)
	f := netdrivertest.SimulatedPod(netdrivertest.SimLink{Name: "eth0"})
	s := testutil.NewStore(t)
	err = run(t, vmi, f, s, phase1.Options{})
	require.ErrorIs(t, err, api.ErrNotValidated)
	var pe *phase1.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, phase1.StepValidate, pe.Step)
	require.Empty(t, f.Calls())

	require.NoError(t, api.Validate(vmi))
	require.NoError(t, run(t, vmi, f, s, phase1.Options{}))
}

// TestRunRefusesUnknownPlugin: a binding plugin name the registry does
// not hold (virtnet-masquerade misspelt) is refused at validation, before
// any kernel call, with the field's path and the names known; with the
// default registry, virtnet's own plugin names run.
func TestRunRefusesUnknownPlugin(t *testing.T) {
	vmi := testutil.LoadVMI(t, strings.Replace(masqueradeVMI, "masquerade: {}", "binding: {name: virtnet-masquerad}", 1))
	f := netdrivertest.SimulatedPod(netdrivertest.SimLink{Name: "eth0"})
	err := run(t, vmi, f, testutil.NewStore(t), phase1.Options{})
	var pe *phase1.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, phase1.StepValidate, pe.Step)
	fes := api.FieldErrors(err)
	require.Len(t, fes, 1, "%v", err)
	require.Equal(t, "spec.domain.devices.interfaces[0].binding.name", fes[0].Path)
	require.Contains(t, fes[0].Reason, api.PluginMasquerade)
	require.Empty(t, f.Calls())

	vmi = testutil.LoadVMI(t, strings.Replace(masqueradeVMI, "masquerade: {}", "binding: {name: "+api.PluginMasquerade+"}", 1))
	require.NoError(t, run(t, vmi, f, testutil.NewStore(t), phase1.Options{}))
}

// TestLogLinesPlain: phase1's log lines (Run, a re-run, Cleanup) carry
// plain values, never a struct dumped as one attribute.
func TestLogLinesPlain(t *testing.T) {
	for _, tc := range []struct {
		name, vmi string
		links     []netdrivertest.SimLink
	}{
		{"bridge", bridgeVMI, []netdrivertest.SimLink{{Name: "eth0"}}},
		{"masquerade", masqueradeVMI, []netdrivertest.SimLink{{Name: "eth0"}}},
		{"three", threeVMI, threeInterfaces.Links},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log, lines := testutil.PlainLogger(t)
			vmi := testutil.LoadVMI(t, tc.vmi)
			f := netdrivertest.SimulatedPod(tc.links...)
			s := testutil.NewStore(t)
			opts := phase1.Options{Logger: log}
			require.NoError(t, run(t, vmi, f, s, opts))
			require.NoError(t, run(t, vmi, f, s, opts))
			opts.Driver = f
			require.NoError(t, phase1.Cleanup(context.Background(), vmi, "", s, opts))
			require.Positive(t, lines.Lines())
		})
	}
}

func mustLink(t testing.TB, f *netdrivertest.Fake, name string) *netdriver.Link {
	t.Helper()
	l, err := f.LinkByName(name)
	require.NoError(t, err)
	return l
}

func requireAddrs(t testing.TB, f *netdrivertest.Fake, name string, want ...string) {
	t.Helper()
	var got []string
	for _, fam := range []netdriver.Family{netdriver.IPv4, netdriver.IPv6} {
		as, err := f.AddrList(name, fam)
		require.NoError(t, err)
		for _, a := range as {
			got = append(got, a.String())
		}
	}
	require.ElementsMatch(t, want, got, "addresses of %s", name)
}

// TestRollbackOnLaterDiscoverFailure: the second interface's pod link is
// missing, so phase1 fails at discovery after the first interface was
// prepared; the first is undone (all or none).
func TestRollbackOnLaterDiscoverFailure(t *testing.T) {
	vmi := testutil.LoadVMI(t, threeVMI)
	links := []netdrivertest.SimLink{{Name: "eth0"}, {Name: "net2", NoIPAM: true}}
	f := netdrivertest.SimulatedPod(links...)
	pristine := f.Snapshot()
	s := testutil.NewStore(t)
	err := run(t, vmi, f, s, phase1.Options{})
	var pe *phase1.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "blue", pe.Interface)
	require.Equal(t, phase1.StepDiscover, pe.Step)
	got := f.Snapshot()
	require.Equal(t, pristine.Links, got.Links)
	require.Equal(t, pristine.Addrs, got.Addrs)
	require.Empty(t, got.NAT)
	_, err = s.ReadInterface(uid, "default")
	require.ErrorIs(t, err, cache.ErrNotExist, "the rolled-back interface's records are gone")
}

// TestCanceled: a cancelled context stops phase1 before the next
// interface and undoes the ones done, despite the cancellation.
func TestCanceled(t *testing.T) {
	vmi := testutil.LoadVMI(t, threeVMI)
	links := []netdrivertest.SimLink{{Name: "eth0"}, {Name: "net1"}, {Name: "net2", NoIPAM: true}}
	f := netdrivertest.SimulatedPod(links...)
	pristine := f.Snapshot()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := phase1.Run(ctx, vmi, "", testutil.NewStore(t), phase1.Options{Driver: f})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, pristine.Links, f.Snapshot().Links)
}

// TestCleanupUsesRecordedNames: cleanup after spec.networks was
// reordered (so ordinal pod interface names moved) undoes each interface
// under the names phase1 used.
func TestCleanupUsesRecordedNames(t *testing.T) {
	vmi := testutil.LoadVMI(t, threeVMI)
	links := []netdrivertest.SimLink{{Name: "eth0"}, {Name: "net1"}, {Name: "net2", NoIPAM: true}}
	f := netdrivertest.SimulatedPod(links...)
	pristine := f.Snapshot()
	s := testutil.NewStore(t)
	require.NoError(t, run(t, vmi, f, s, phase1.Options{}))
	nets := vmi.Spec.Networks
	nets[1], nets[2] = nets[2], nets[1]
	require.NoError(t, phase1.Cleanup(context.Background(), vmi, "", s, phase1.Options{Driver: f}))
	got := f.Snapshot()
	require.Equal(t, pristine.Links, got.Links)
	require.Equal(t, pristine.Addrs, got.Addrs)
	require.Equal(t, pristine.Routes, got.Routes)
}

// TestRunPodIPsOrder: a dual-stack pod's recorded PodIPs put the family of
// the pod's primary IP first: Options.PrimaryPodIP, else MY_POD_IP, else
// IPv4.
func TestRunPodIPsOrder(t *testing.T) {
	for _, tc := range []struct {
		name, option, env string
		want              []string
	}{
		{"neither: IPv4 first", "", "", []string{"10.244.1.7", "fd00:10:244:1::7"}},
		{"MY_POD_IP IPv6", "", "fd00:10:244:1::7", []string{"fd00:10:244:1::7", "10.244.1.7"}},
		{"MY_POD_IP IPv4", "", "10.244.1.7", []string{"10.244.1.7", "fd00:10:244:1::7"}},
		{"option over MY_POD_IP", "fd00:10:244:1::7", "10.244.1.7", []string{"fd00:10:244:1::7", "10.244.1.7"}},
		{"MY_POD_IP not an address", "", "pod", []string{"10.244.1.7", "fd00:10:244:1::7"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(phase1.PodIPEnv, tc.env)
			vmi := testutil.LoadVMI(t, bridgeVMI)
			f := netdrivertest.SimulatedPod(netdrivertest.SimLink{Name: "eth0"})
			require.NoError(t, f.AddrReplace("eth0", netip.MustParsePrefix("fd00:10:244:1::7/64")))
			s := testutil.NewStore(t)
			require.NoError(t, run(t, vmi, f, s, phase1.Options{PrimaryPodIP: tc.option}))
			pod, err := s.ReadProgress(string(vmi.Metadata.UID), "default")
			require.NoError(t, err)
			require.Equal(t, tc.want, addrTexts(pod.PodIPs))
		})
	}
}
