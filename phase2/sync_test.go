package phase2_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/domxml"
	"github.com/virtnet/virtnet/phase2"
	"github.com/virtnet/virtnet/testrig/testutil"
)

const syncUID = "4d2c1b0a-9e8f-4a7b-8c6d-5e4f3a2b1c0d"

// syncVMI is a q35 VMI with masquerade on the pod network and, when
// blue is not "", a bridge interface on Multus network blue whose
// interface entry ends with blue (", state: down" for instance).
func syncVMI(t *testing.T, blue string) *api.VMI {
	t.Helper()
	y := `
kind: VirtualMachineInstance
metadata: {name: vmi-sync, namespace: default, uid: ` + syncUID + `, annotations: {virtnet.io/pod-interface-names: hashed}}
spec:
  domain:
    machine: {type: q35}
    resources: {requests: {memory: 128Mi}}
    devices:
      interfaces:
      - {name: default, masquerade: {}}
`
	nets := "  networks:\n  - {name: default, pod: {}}\n"
	if blue != "" {
		y += "      - {name: blue, bridge: {}" + strings.TrimPrefix(blue, "-") + "}\n"
		nets += "  - {name: blue, multus: {networkName: blue-net}}\n"
	}
	return testutil.LoadVMI(t, y+nets)
}

var blueRecord = cache.Interface{
	Interface: "blue", PodInterface: api.HashedPodInterface("blue"), Binding: "bridge",
	Bridge: "k6t-16477688c0e", Tap: "tap16477688c0e", NIC: "16477688c0e-nic",
	MAC: cache.MustParseMAC("0a:58:0a:f4:02:07"), MTU: 1400,
	IPv4: netip.MustParsePrefix("192.168.2.7/24"), ServerIPv4: netip.MustParseAddr("169.254.75.11"),
}

// fakeDHCP records the servers Sync starts and stops; stale names the
// interfaces whose server's bridge was made again.
type fakeDHCP struct {
	running map[string]bool
	stale   map[string]bool
	log     []string
	fail    error
}

func (f *fakeDHCP) Stale(iface string) (bool, error) {
	return f.running[iface] && f.stale[iface], nil
}

func (f *fakeDHCP) Start(_ context.Context, _ *api.VMI, it phase2.Item) error {
	if f.fail != nil {
		return f.fail
	}
	f.running[it.Pair.Interface.Name] = true
	f.log = append(f.log, "start "+it.Pair.Interface.Name)
	return nil
}

func (f *fakeDHCP) Stop(iface string) error {
	delete(f.running, iface)
	delete(f.stale, iface)
	f.log = append(f.log, "stop "+iface)
	return nil
}

// apply does to dom what libvirt does with the changes: attach appends
// the device, detach removes it, update replaces its link state.
func apply(t *testing.T, dom *libvirtxml.Domain, changes []phase2.DeviceChange) {
	t.Helper()
	for _, c := range changes {
		var dev libvirtxml.DomainInterface
		require.NoError(t, dev.Unmarshal(c.XML), c.XML)
		switch c.Op {
		case phase2.OpAttach:
			dom.Devices.Interfaces = append(dom.Devices.Interfaces, dev)
		case phase2.OpDetach:
			for i := range dom.Devices.Interfaces {
				if dom.Devices.Interfaces[i].Alias.Name == c.Alias {
					dom.Devices.Interfaces = append(dom.Devices.Interfaces[:i], dom.Devices.Interfaces[i+1:]...)
					break
				}
			}
		case phase2.OpUpdate:
			for i := range dom.Devices.Interfaces {
				if dom.Devices.Interfaces[i].Alias.Name == c.Alias {
					dom.Devices.Interfaces[i].Link = dev.Link
				}
			}
		}
	}
}

func marshal(t *testing.T, dom *libvirtxml.Domain) string {
	t.Helper()
	x, err := dom.Marshal()
	require.NoError(t, err)
	return x
}

// TestSync is a launcher's live update loop: the VM runs with eth0
// (masquerade); blue is added (attach, its DHCP server started first),
// set down and up (updates of its link state), then unplugged (detach, its
// DHCP server stopped). After each change applied the next Sync has
// nothing to do. The device XML of each step is a golden
// (testdata/TestSync, -update).
func TestSync(t *testing.T) {
	ctx := context.Background()
	store := writeRecords(t, syncUID, masqRecord("default", "eth0", "02:1a:2b:3c:4d:5e"))
	dom, err := phase2.Domain(ctx, syncVMI(t, ""), store, phase2.Options{})
	require.NoError(t, err)
	dhcp := &fakeDHCP{running: map[string]bool{}}
	sync := func(vmi *api.VMI) []phase2.DeviceChange {
		t.Helper()
		changes, err := phase2.Sync(ctx, marshal(t, dom), vmi, phase2.CacheRecords{Store: store}, dhcp, phase2.Options{})
		require.NoError(t, err)
		return changes
	}
	require.Empty(t, sync(syncVMI(t, "")), "the domain as started has the VMI's interfaces")

	// blue added to the VMI: not attached before phase1 finished it.
	_, err = phase2.Sync(ctx, marshal(t, dom), syncVMI(t, "-"), phase2.CacheRecords{Store: store}, dhcp, phase2.Options{})
	var nr *phase2.NotReadyError
	var mc *phase2.MissingCacheError
	require.True(t, errors.As(err, &nr) || errors.As(err, &mc), "%v", err)
	require.Empty(t, dhcp.log)

	testutil.WriteRecord(t, store, syncUID, &blueRecord)
	testutil.WriteRecord(t, store, syncUID, finished(blueRecord))
	for _, step := range []struct {
		name, blue string
		op         phase2.Op
		dhcp       []string
	}{
		{"plug", "-", phase2.OpAttach, []string{"start blue"}},
		{"down", ", state: down", phase2.OpUpdate, nil},
		{"up", ", state: up", phase2.OpUpdate, nil},
		{"unplug", ", state: absent", phase2.OpDetach, []string{"stop blue"}},
	} {
		t.Run(step.name, func(t *testing.T) {
			dhcp.log = nil
			vmi := syncVMI(t, step.blue)
			changes := sync(vmi)
			require.Len(t, changes, 1)
			c := changes[0]
			require.Equal(t, step.op, c.Op)
			require.Equal(t, "blue", c.Interface)
			require.Equal(t, "ua-blue", c.Alias)
			testutil.Golden(t, filepath.Join("testdata", "TestSync", step.name+".xml"), c.XML)
			require.Equal(t, step.dhcp, dhcp.log)
			apply(t, dom, changes)
			dhcp.log = nil
			require.Empty(t, sync(vmi), "converged")
			require.Empty(t, dhcp.log)
		})
	}
	require.Empty(t, dhcp.running)
	require.Len(t, dom.Devices.Interfaces, 1, "eth0 alone, as at start")

	t.Run("DHCP fails", func(t *testing.T) {
		dhcp.fail = errors.New("cannot bind")
		_, err := phase2.Sync(ctx, marshal(t, dom), syncVMI(t, "-"), phase2.CacheRecords{Store: store}, dhcp, phase2.Options{})
		require.ErrorContains(t, err, `interface "blue": DHCP server: cannot bind`)
	})
	t.Run("bad XML", func(t *testing.T) {
		_, err := phase2.Sync(ctx, "<domain", syncVMI(t, ""), phase2.CacheRecords{Store: store}, nil, phase2.Options{})
		require.ErrorContains(t, err, "running domain XML")
	})
}

// TestSyncLinkDownAtStart: an interface with state: down starts with
// <link state='down'/>, and Sync then has nothing to update.
func TestSyncLinkDownAtStart(t *testing.T) {
	ctx := context.Background()
	store := writeRecords(t, syncUID, masqRecord("default", "eth0", "02:1a:2b:3c:4d:5e"), blueRecord)
	vmi := syncVMI(t, ", state: down")
	dom, err := phase2.Domain(ctx, vmi, store, phase2.Options{})
	require.NoError(t, err)
	x := marshal(t, dom)
	require.Contains(t, x, `<link state="down"></link>`)
	changes, err := phase2.Sync(ctx, x, vmi, phase2.CacheRecords{Store: store}, nil, phase2.Options{})
	require.NoError(t, err)
	require.Empty(t, changes)
}

// TestSyncDuplicateAliasesRefused: a running domain with two devices of
// one alias (two interfaces, two host devices, an interface and a host
// device) is refused by Sync as Render refuses it, with the same error,
// and no DHCP server is started: one rule for both (before, Sync took the
// last device of the alias and went on).
func TestSyncDuplicateAliasesRefused(t *testing.T) {
	ctx := context.Background()
	store := writeRecords(t, syncUID, masqRecord("default", "eth0", "02:1a:2b:3c:4d:5e"), blueRecord)
	testutil.WriteRecord(t, store, syncUID, finished(blueRecord))
	vmi := syncVMI(t, "-")
	hostdev := func(alias string) libvirtxml.DomainHostdev {
		return libvirtxml.DomainHostdev{Alias: &libvirtxml.DomainAlias{Name: alias}, SubsysPCI: &libvirtxml.DomainHostdevSubsysPCI{
			Source: &libvirtxml.DomainHostdevSubsysPCISource{Address: &libvirtxml.DomainAddressPCI{}}}}
	}
	for _, tc := range []struct {
		name  string
		twice func(d *libvirtxml.DomainDeviceList)
		err   string
	}{
		{"interfaces", func(d *libvirtxml.DomainDeviceList) {
			down := d.Interfaces[0]
			down.Link = &libvirtxml.DomainInterfaceLink{State: "down"}
			d.Interfaces = append(d.Interfaces, down)
		}, `two interfaces with alias "ua-default"`},
		{"host devices", func(d *libvirtxml.DomainDeviceList) {
			d.Hostdevs = append(d.Hostdevs, hostdev("ua-sriov-vf"), hostdev("ua-sriov-vf"))
		}, `two host devices with alias "ua-sriov-vf"`},
		{"interface and host device", func(d *libvirtxml.DomainDeviceList) {
			d.Hostdevs = append(d.Hostdevs, hostdev("ua-blue"))
		}, `an interface and a host device with alias "ua-blue"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dom, err := phase2.Domain(ctx, syncVMI(t, ""), store, phase2.Options{})
			require.NoError(t, err)
			if tc.name == "interface and host device" {
				// blue is attached: its alias is the interface's.
				dom, err = phase2.Domain(ctx, vmi, store, phase2.Options{})
				require.NoError(t, err)
			}
			tc.twice(dom.Devices)
			dhcp := &fakeDHCP{running: map[string]bool{}}
			changes, serr := phase2.Sync(ctx, marshal(t, dom), vmi, phase2.CacheRecords{Store: store}, dhcp, phase2.Options{})
			require.ErrorContains(t, serr, tc.err)
			require.Empty(t, changes)
			require.Empty(t, dhcp.log, "no DHCP server started")

			items, err := phase2.ReadRecords(ctx, vmi, store, phase2.Options{})
			require.NoError(t, err)
			rerr := phase2.Render(vmi, items, dom, binding.RenderOptions{})
			require.ErrorContains(t, rerr, tc.err)
			require.Equal(t, rerr.Error(), serr.Error(), "one rule, one error")
		})
	}
}

// TestSyncReplugsAfterFlip: blue is attached; then, between two Syncs,
// phase1 unplugs it (state: absent) and plugs it again (present): a new
// tap and bridge. Sync compares what the domain's device is attached to
// with what the records name now: when the records name another bridge
// or tap (names that moved), another MAC (Multus made a new pod link), or
// another interface type, or when the interface's DHCP server finds its
// bridge made again under the same name, Sync returns a detach of the
// running device then an attach of the new one and restarts the DHCP
// server; applied, the next Sync has nothing to do. Before, Sync compared
// aliases only and returned nothing: the guest's NIC stayed on the dead
// tap, its DHCP server on the deleted bridge.
func TestSyncReplugsAfterFlip(t *testing.T) {
	ctx := context.Background()
	movedNames := blueRecord
	movedNames.Bridge, movedNames.Tap, movedNames.NIC = "k6t-net9", "tap9", "net9-nic"
	newMAC := blueRecord
	newMAC.MAC = cache.MustParseMAC("0a:58:0a:f4:02:99")
	for _, tc := range []struct {
		name   string
		again  cache.Interface
		remade bool
		typ    binding.InterfaceType
	}{
		{name: "bridge and tap of other names", again: movedNames},
		{name: "tap of another name, type ethernet", again: movedNames, typ: binding.InterfaceEthernet},
		{name: "another MAC", again: newMAC},
		{name: "same names, bridge made again", again: blueRecord, remade: true},
		{name: "same names, bridge made again, type ethernet", again: blueRecord, remade: true, typ: binding.InterfaceEthernet},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := writeRecords(t, syncUID, masqRecord("default", "eth0", "02:1a:2b:3c:4d:5e"), blueRecord)
			testutil.WriteRecord(t, store, syncUID, finished(blueRecord))
			opts := phase2.Options{Render: binding.RenderOptions{InterfaceType: tc.typ}}
			dom, err := phase2.Domain(ctx, syncVMI(t, ""), store, opts)
			require.NoError(t, err)
			dhcp := &fakeDHCP{running: map[string]bool{}, stale: map[string]bool{}}
			vmi := syncVMI(t, "-")
			changes, err := phase2.Sync(ctx, marshal(t, dom), vmi, phase2.CacheRecords{Store: store}, dhcp, opts)
			require.NoError(t, err)
			require.Len(t, changes, 1)
			apply(t, dom, changes)
			old := changes[0].XML

			// The flip: phase1 removes blue's records and makes them again.
			require.NoError(t, store.Delete(syncUID, "blue"))
			testutil.WriteRecord(t, store, syncUID, &tc.again)
			testutil.WriteRecord(t, store, syncUID, finished(tc.again))
			dhcp.stale["blue"] = tc.remade
			dhcp.log = nil

			changes, err = phase2.Sync(ctx, marshal(t, dom), vmi, phase2.CacheRecords{Store: store}, dhcp, opts)
			require.NoError(t, err)
			require.Len(t, changes, 2, "a replug")
			require.Equal(t, phase2.OpDetach, changes[0].Op)
			require.Equal(t, "ua-blue", changes[0].Alias)
			require.Equal(t, old, changes[0].XML, "the running device detached")
			require.Equal(t, phase2.OpAttach, changes[1].Op)
			want, err := phase2.Domain(ctx, vmi, store, opts)
			require.NoError(t, err)
			require.Equal(t, mustMarshalIface(t, want, "ua-blue"), changes[1].XML, "the device the records name now attached")
			require.Equal(t, []string{"stop blue", "start blue"}, dhcp.log, "the DHCP server restarted")

			apply(t, dom, changes)
			dhcp.log = nil
			changes, err = phase2.Sync(ctx, marshal(t, dom), vmi, phase2.CacheRecords{Store: store}, dhcp, opts)
			require.NoError(t, err)
			require.Empty(t, changes, "converged")
			require.Empty(t, dhcp.log)
		})
	}
}

// mustMarshalIface is the XML of dom's interface of the alias.
func mustMarshalIface(t *testing.T, dom *libvirtxml.Domain, alias string) string {
	t.Helper()
	for _, i := range dom.Devices.Interfaces {
		if i.Alias != nil && i.Alias.Name == alias {
			x, err := i.Marshal()
			require.NoError(t, err)
			return x
		}
	}
	t.Fatalf("no interface %s", alias)
	return ""
}

// TestSyncChangesStandAlone: one update sets blue down, unplugs red
// (state: absent) and plugs green, whose record phase1 has not finished
// (its pod link is missing), and yellow, whose DHCP server cannot start.
// Each change stands alone: Sync returns blue's update and red's detach
// (red's DHCP server stopped), and an error naming green (NotReadyError)
// and yellow; nothing of green or yellow. Before, green's missing record
// failed the whole Sync with no change.
func TestSyncChangesStandAlone(t *testing.T) {
	ctx := context.Background()
	rec := func(name string, b byte) cache.Interface {
		r := blueRecord
		r.Interface, r.PodInterface = name, api.HashedPodInterface(name)
		r.Bridge, r.Tap, r.NIC = "k6t-"+name, "tap"+name, name+"-nic"
		r.MAC = cache.MustParseMAC(fmt.Sprintf("0a:58:0a:f4:02:%02x", b))
		return r
	}
	red, green, yellow := rec("red", 8), rec("green", 9), rec("yellow", 10)
	store := writeRecords(t, syncUID, masqRecord("default", "eth0", "02:1a:2b:3c:4d:5e"), blueRecord, red, yellow)
	for _, r := range []cache.Interface{blueRecord, red, yellow} {
		testutil.WriteRecord(t, store, syncUID, finished(r))
	}
	testutil.WriteRecord(t, store, syncUID, &green) // started, not finished
	vmi := func(blue, red string, more bool) *api.VMI {
		y := `
kind: VirtualMachineInstance
metadata: {name: vmi-sync, namespace: default, uid: ` + syncUID + `, annotations: {virtnet.io/pod-interface-names: hashed}}
spec:
  domain:
    machine: {type: q35}
    resources: {requests: {memory: 128Mi}}
    devices:
      interfaces:
      - {name: default, masquerade: {}}
      - {name: blue, bridge: {}` + blue + `}
      - {name: red, bridge: {}` + red + `}
`
		nets := "  networks:\n  - {name: default, pod: {}}\n  - {name: blue, multus: {networkName: blue-net}}\n  - {name: red, multus: {networkName: red-net}}\n"
		if more {
			y += "      - {name: green, bridge: {}}\n      - {name: yellow, bridge: {}}\n"
			nets += "  - {name: green, multus: {networkName: green-net}}\n  - {name: yellow, multus: {networkName: yellow-net}}\n"
		}
		return testutil.LoadVMI(t, y+nets)
	}
	dom, err := phase2.Domain(ctx, vmi("", "", false), store, phase2.Options{})
	require.NoError(t, err)
	dhcp := &yellowFails{fakeDHCP{running: map[string]bool{"blue": true, "red": true}}}

	changes, err := phase2.Sync(ctx, marshal(t, dom), vmi(", state: down", ", state: absent", true), phase2.CacheRecords{Store: store}, dhcp, phase2.Options{})
	var nr *phase2.NotReadyError
	require.ErrorAs(t, err, &nr)
	require.Equal(t, "green", nr.Interface)
	require.ErrorContains(t, err, `interface "yellow": DHCP server: cannot bind`)
	var got []string
	for _, c := range changes {
		got = append(got, string(c.Op)+" "+c.Interface)
	}
	require.Equal(t, []string{"update blue", "detach red"}, got, "blue's down and red's unplug stand alone")
	require.Contains(t, changes[0].XML, `<link state="down"></link>`)
	require.Equal(t, map[string]bool{"blue": true}, dhcp.running, "red's server stopped, none for green or yellow")
}

// yellowFails is a fakeDHCP whose server of yellow cannot start.
type yellowFails struct{ fakeDHCP }

func (f *yellowFails) Start(ctx context.Context, vmi *api.VMI, it phase2.Item) error {
	if it.Pair.Interface.Name == "yellow" {
		return errors.New("cannot bind")
	}
	return f.fakeDHCP.Start(ctx, vmi, it)
}

// TestSyncNoHotplugPort: a q35 domain with no spare root port (built
// with domxml.HotplugPortsNone) cannot take blue: Sync refuses the attach
// with a *HotplugPortError naming it, returns no change and starts no
// DHCP server. The default domain (KubeVirt's spare ports) takes it; once
// the spares are used up, the next plug is refused.
func TestSyncNoHotplugPort(t *testing.T) {
	ctx := context.Background()
	store := writeRecords(t, syncUID, masqRecord("default", "eth0", "02:1a:2b:3c:4d:5e"))
	testutil.WriteRecord(t, store, syncUID, &blueRecord)
	testutil.WriteRecord(t, store, syncUID, finished(blueRecord))
	dom, err := phase2.Domain(ctx, syncVMI(t, ""), store, phase2.Options{Build: domxml.Options{HotplugPorts: domxml.HotplugPortsNone}})
	require.NoError(t, err)
	require.Zero(t, domxml.SpareRootPorts(dom))
	dhcp := &fakeDHCP{running: map[string]bool{}}
	changes, err := phase2.Sync(ctx, marshal(t, dom), syncVMI(t, "-"), phase2.CacheRecords{Store: store}, dhcp, phase2.Options{})
	var pe *phase2.HotplugPortError
	require.ErrorAs(t, err, &pe, "%v", err)
	require.Equal(t, []string{"blue"}, pe.Interfaces)
	require.Zero(t, pe.Free)
	require.True(t, phase1IsPermanent(err))
	require.Empty(t, changes)
	require.Empty(t, dhcp.log, "no DHCP server started for a refused attach")

	dom, err = phase2.Domain(ctx, syncVMI(t, ""), store, phase2.Options{})
	require.NoError(t, err)
	require.Equal(t, 3, domxml.SpareRootPorts(dom), "KubeVirt 1.x's spare ports by default")
	dom.Devices.Interfaces = append(dom.Devices.Interfaces, dom.Devices.Interfaces[0], dom.Devices.Interfaces[0], dom.Devices.Interfaces[0])
	for i := range dom.Devices.Interfaces[1:] {
		dom.Devices.Interfaces[i+1].Alias = &libvirtxml.DomainAlias{Name: fmt.Sprintf("ua-other%d", i)}
	}
	require.Zero(t, domxml.SpareRootPorts(dom), "three devices plugged since")
	_, err = phase2.Sync(ctx, marshal(t, dom), syncVMI(t, "-"), phase2.CacheRecords{Store: store}, dhcp, phase2.Options{})
	require.ErrorAs(t, err, &pe)

	dom.Devices.Interfaces = dom.Devices.Interfaces[:1]
	changes, err = phase2.Sync(ctx, marshal(t, dom), syncVMI(t, "-"), phase2.CacheRecords{Store: store}, dhcp, phase2.Options{})
	require.NoError(t, err)
	require.Len(t, changes, 1)
	require.Equal(t, phase2.OpAttach, changes[0].Op)
}

// phase1IsPermanent asks the error, as phase1.IsPermanent does.
func phase1IsPermanent(err error) bool {
	var p interface{ Permanent() bool }
	return errors.As(err, &p) && p.Permanent()
}
