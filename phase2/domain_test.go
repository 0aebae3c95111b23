package phase2_test

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/phase2"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// loadVMI loads testdata/vmi/<name>.yaml.
func loadVMI(t testing.TB, name string) *api.VMI {
	t.Helper()
	return testutil.LoadVMIFile(t, filepath.Join("testdata", "vmi", name+".yaml"))
}

// writeRecords writes recs into a new store under t.TempDir().
func writeRecords(t testing.TB, uid string, recs ...cache.Interface) *cache.Store {
	t.Helper()
	store, err := cache.New(t.TempDir())
	require.NoError(t, err)
	for i := range recs {
		testutil.WriteRecord(t, store, uid, &recs[i])
		testutil.WriteRecord(t, store, uid, finished(recs[i]))
	}
	return store
}

// finished is the progress record phase1 leaves once rec is prepared.
func finished(rec cache.Interface) *cache.Progress {
	return &cache.Progress{Interface: rec.Interface, PodInterface: rec.PodInterface, Binding: rec.Binding, State: cache.Finished}
}

// The source document's values (seeds/000): VM MAC, MTU 1440, k6t-eth0.
var sourceDocRecord = cache.Interface{
	Interface: "bridge", PodInterface: "eth0", Binding: "bridge",
	Bridge: "k6t-eth0", Tap: "tap0", NIC: "eth0-nic",
	MAC: cache.MustParseMAC("8e:61:55:c2:4a:bd"), MTU: 1440,
	IPv4: netip.MustParsePrefix("172.16.0.24/26"), Gateway: netip.MustParseAddr("172.16.0.1"), ServerIPv4: netip.MustParseAddr("169.254.75.10"),
}

func masqRecord(iface, pod, mac string) cache.Interface {
	return cache.Interface{
		Interface: iface, PodInterface: pod, Binding: "masquerade",
		Bridge: "k6t-" + pod, Tap: "tap" + pod[3:], MAC: cache.MustParseMAC(mac), MTU: 1440,
		IPv4: netip.MustParsePrefix("10.0.2.2/24"), Gateway: netip.MustParseAddr("10.0.2.1"), ServerIPv4: netip.MustParseAddr("10.0.2.1"),
		IPv6: netip.MustParsePrefix("fd10:0:2::2/120"), GatewayIPv6: netip.MustParseAddr("fd10:0:2::1"),
	}
}

func bridgeRecord(iface, pod, mac string, mtu int) cache.Interface {
	return cache.Interface{
		Interface: iface, PodInterface: pod, Binding: "bridge",
		Bridge: "k6t-" + pod, Tap: "tap" + pod[3:], NIC: pod + "-nic", MAC: cache.MustParseMAC(mac), MTU: mtu,
		IPAMDisabled: true,
	}
}

type domainCase struct {
	name    string
	vmi     string
	records []cache.Interface
	opts    phase2.Options
}

func domainCases() []domainCase {
	return []domainCase{
		{name: "bridge-source-document", vmi: "bridge", records: []cache.Interface{sourceDocRecord}},
		{name: "bridge-ethernet", vmi: "bridge", records: []cache.Interface{sourceDocRecord},
			opts: phase2.Options{Render: binding.RenderOptions{InterfaceType: binding.InterfaceEthernet}}},
		{name: "masquerade-ports", vmi: "masquerade", records: []cache.Interface{masqRecord("default", "eth0", "02:1a:2b:3c:4d:5e")}},
		{name: "three-interfaces", vmi: "three", records: []cache.Interface{
			masqRecord("default", "eth0", "02:6c:11:22:33:44"),
			bridgeRecord("legacy", "net1", "0a:58:0a:81:00:07", 9000),
			bridgeRecord("storage", "net2", "02:fe:0a:00:00:11", 1500),
		}},
		{name: "cloudinit-containerdisk", vmi: "cloudinit", records: []cache.Interface{sourceDocRecordFor("default")},
			opts: phase2.Options{Build: domxmlOptionsBlock("data")}},
		{name: "efi-secureboot", vmi: "efi", records: []cache.Interface{masqRecord("default", "eth0", "02:00:00:aa:bb:cc")}},
	}
}

func sourceDocRecordFor(iface string) cache.Interface {
	r := sourceDocRecord
	r.Interface = iface
	return r
}

func TestDomain(t *testing.T) {
	for _, tc := range domainCases() {
		t.Run(tc.name, func(t *testing.T) {
			vmi := loadVMI(t, tc.vmi)
			store := writeRecords(t, vmi.Metadata.UID, tc.records...)
			dom, err := phase2.Domain(context.Background(), vmi, store, tc.opts)
			require.NoError(t, err)
			testutil.CheckDomain(t, dom, testutil.GoldenPath(t, tc.name, ".xml"))

			// Build then ReadRecords and Render give the same domain.
			again, err := phase2.Domain(context.Background(), vmi, store, tc.opts)
			require.NoError(t, err)
			require.Equal(t, mustMarshal(t, dom), mustMarshal(t, again), "output is not deterministic")
		})
	}
}

func mustMarshal(t testing.TB, dom *libvirtxml.Domain) string {
	t.Helper()
	return testutil.MarshalDomain(t, dom)
}

func TestMTUChangesOnlyTheMTULine(t *testing.T) {
	vmi := loadVMI(t, "bridge")
	render := func(mtu int) []string {
		rec := sourceDocRecord
		rec.MTU = mtu
		dom, err := phase2.Domain(context.Background(), vmi, writeRecords(t, vmi.Metadata.UID, rec), phase2.Options{})
		require.NoError(t, err)
		return strings.Split(mustMarshal(t, dom), "\n")
	}
	a, b := render(1440), render(9000)
	require.Len(t, b, len(a))
	var diff []string
	for i := range a {
		if a[i] != b[i] {
			diff = append(diff, a[i]+" → "+b[i])
		}
	}
	require.Equal(t, []string{`      <mtu size="1440"></mtu> →       <mtu size="9000"></mtu>`}, diff)
}

func TestRenderErrors(t *testing.T) {
	vmi := loadVMI(t, "bridge")
	uid := vmi.Metadata.UID
	stale := func(mut func(*cache.Interface)) cache.Interface {
		r := sourceDocRecord
		mut(&r)
		return r
	}
	for _, tc := range []struct {
		name  string
		recs  []cache.Interface
		raw   string // written as the record file instead
		field string // of an ErrStaleCache error; "" for MissingCacheError
	}{
		{name: "missing"},
		{name: "other binding", recs: []cache.Interface{stale(func(r *cache.Interface) { r.Binding = "masquerade" })}, field: "binding"},
		{name: "other pod interface", recs: []cache.Interface{stale(func(r *cache.Interface) { r.PodInterface = "net1" })}, field: "podInterface"},
		{name: "old version", raw: `{"version": 0, "interface": "bridge"}`, field: "version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := writeRecords(t, uid, tc.recs...)
			if tc.raw != "" {
				p, err := store.InterfacePath(uid, "bridge")
				require.NoError(t, err)
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(t, os.WriteFile(p, []byte(tc.raw), 0o644))
			}
			dom := &libvirtxml.Domain{}
			err := enrich(context.Background(), vmi, store, dom, binding.RenderOptions{})
			require.Error(t, err)
			path, _ := store.InterfacePath(uid, "bridge")
			require.Contains(t, err.Error(), `"bridge"`)
			require.Contains(t, err.Error(), path)
			if tc.field == "" {
				var me *phase2.MissingCacheError
				require.ErrorAs(t, err, &me)
				require.Equal(t, "bridge", me.Interface)
				require.ErrorIs(t, err, cache.ErrNotExist)
				return
			}
			require.ErrorIs(t, err, phase2.ErrStaleCache)
			require.ErrorContains(t, err, ": "+tc.field+" is ")
		})
	}
}

func TestRenderOrder(t *testing.T) {
	vmi := loadVMI(t, "three")
	store := writeRecords(t, vmi.Metadata.UID, domainCases()[3].records...)
	dom := &libvirtxml.Domain{}
	require.NoError(t, enrich(context.Background(), vmi, store, dom, binding.RenderOptions{}))
	var aliases []string
	for _, di := range dom.Devices.Interfaces {
		aliases = append(aliases, di.Alias.Name)
	}
	// spec.domain.devices.interfaces order, not spec.networks order.
	require.Equal(t, []string{"ua-default", "ua-storage", "ua-legacy"}, aliases)
}

func TestRenderCanceled(t *testing.T) {
	vmi := loadVMI(t, "bridge")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := enrich(ctx, vmi, writeRecords(t, vmi.Metadata.UID, sourceDocRecord), &libvirtxml.Domain{}, binding.RenderOptions{})
	require.True(t, errors.Is(err, context.Canceled), "got %v", err)
}
