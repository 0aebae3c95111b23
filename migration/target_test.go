package migration_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/migration"
	"github.com/virtnet/virtnet/netdriver/netdrivertest"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/phase2"
	"github.com/virtnet/virtnet/testrig/testutil"
)

const threeVMI = `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: vm, namespace: default, uid: 6f1b4f4e-0000-4000-8000-000000000024%s}
spec:
  domain:
    resources: {requests: {memory: 128Mi}}
    devices:
      interfaces:
      - {name: default, masquerade: {}}
      - {name: blue, bridge: {}}
      - {name: red, bridge: {}}
  networks:
  - {name: default, pod: {}}
  - {name: blue, multus: {networkName: blue}}
  - {name: red, multus: {networkName: red}}
`

// podDomain runs phase1 (fake kernel) and phase2 for vmi on a simulated
// pod whose links are named links (the last without IPAM).
func podDomain(t *testing.T, vmi *api.VMI, typ binding.InterfaceType, target bool, links ...string) (*libvirtxml.Domain, *cache.Store) {
	t.Helper()
	var sim []netdrivertest.SimLink
	for i, l := range links {
		sim = append(sim, netdrivertest.SimLink{Name: l, NoIPAM: i == len(links)-1})
	}
	s := testutil.NewStore(t)
	require.NoError(t, phase1.Run(context.Background(), vmi, "", s, phase1.Options{Driver: netdrivertest.SimulatedPod(sim...), MigrationTarget: target}))
	dom, err := phase2.Domain(context.Background(), vmi, s, phase2.Options{Render: binding.RenderOptions{InterfaceType: typ}})
	require.NoError(t, err)
	return dom, s
}

func ifaceByAlias(t *testing.T, dom *libvirtxml.Domain, name string) libvirtxml.DomainInterface {
	t.Helper()
	for _, i := range dom.Devices.Interfaces {
		if i.Alias != nil && i.Alias.Name == "ua-"+name {
			return i
		}
	}
	t.Fatalf("no interface %s", name)
	return libvirtxml.DomainInterface{}
}

// TestTargetDomain: a source pod with KubeVirt v0.53's ordinal names
// (net1, tap1, k6t-net1) migrates to a target pod with KubeVirt 1.x's
// hashed ones (pod16477688c0e, tap16477688c0e): the target domain keeps
// the source's interfaces (MAC, PCI address, model) with the target's
// tap and bridge names, for both interface types; the bridge with IPAM
// is refreshed, the one without and masquerade are not.
func TestTargetDomain(t *testing.T) {
	for _, typ := range []binding.InterfaceType{binding.InterfaceBridge, binding.InterfaceEthernet} {
		t.Run(string(typ), func(t *testing.T) {
			srcVMI := loadVMI(t, strings.Replace(threeVMI, "%s", "", 1))
			src, _ := podDomain(t, srcVMI, typ, false, "eth0", "net1", "net2")
			srcMACs := map[string]string{}
			for _, n := range []string{"default", "blue", "red"} {
				srcMACs[n] = ifaceByAlias(t, src, n).MAC.Address
			}
			// The target's VMI: hashed names, the source's status.
			tgtVMI := loadVMI(t, strings.Replace(threeVMI, "%s", ", annotations: {"+api.PodInterfaceNamesAnnotation+": hashed}", 1))
			for n, mac := range srcMACs {
				tgtVMI.Status.Interfaces = append(tgtVMI.Status.Interfaces, api.InterfaceStatus{Name: n, MAC: mac})
			}
			tgt, store := podDomain(t, tgtVMI, typ, true, "eth0", api.HashedPodInterface("blue"), api.HashedPodInterface("red"))
			out, err := migration.TargetDomain(tgtVMI, nil, src, tgt, store)
			require.NoError(t, err)
			require.Equal(t, []string{"blue"}, out.Refresh)
			for _, n := range []string{"default", "blue", "red"} {
				s, g, w := ifaceByAlias(t, src, n), ifaceByAlias(t, out.Domain, n), ifaceByAlias(t, tgt, n)
				require.Equal(t, s.MAC, g.MAC, "%s keeps its MAC", n)
				require.Equal(t, s.Address, g.Address, "%s keeps its PCI address", n)
				require.Equal(t, s.Model, g.Model)
				require.Equal(t, w.Target, g.Target, "%s takes the target pod's tap", n)
				require.Equal(t, w.Source, g.Source, "%s takes the target pod's bridge", n)
			}
			if typ == binding.InterfaceEthernet {
				require.Equal(t, "tap1", ifaceByAlias(t, src, "blue").Target.Dev)
				require.Equal(t, "tap16477688c0e", ifaceByAlias(t, out.Domain, "blue").Target.Dev)
			} else {
				require.Equal(t, "k6t-net1", ifaceByAlias(t, src, "blue").Source.Bridge.Bridge)
				require.Equal(t, "k6t-16477688c0e", ifaceByAlias(t, out.Domain, "blue").Source.Bridge.Bridge)
			}
			// The rest of the domain is the source's.
			out.Domain.Devices.Interfaces, src.Devices.Interfaces = nil, nil
			a, err := out.Domain.Marshal()
			require.NoError(t, err)
			b, err := src.Marshal()
			require.NoError(t, err)
			require.Equal(t, b, a)
		})
	}
}

// TestTargetDomainRefuses: a target that lacks an interface, or gives it
// another MAC (its phase1 ran without the source's status, KubeVirt's
// #16696), is refused naming the interface.
func TestTargetDomainRefuses(t *testing.T) {
	srcVMI := loadVMI(t, strings.Replace(threeVMI, "%s", "", 1))
	src, _ := podDomain(t, srcVMI, binding.InterfaceBridge, false, "eth0", "net1", "net2")

	// Not a migration target: the bridges take the target pod links' MACs.
	other, store := podDomain(t, srcVMI, binding.InterfaceBridge, false, "eth0", "net1", "net2")
	for i := range other.Devices.Interfaces {
		if other.Devices.Interfaces[i].Alias.Name == "ua-blue" {
			other.Devices.Interfaces[i].MAC.Address = "0a:58:c0:a8:01:99"
		}
	}
	_, err := migration.TargetDomain(srcVMI, nil, src, other, store)
	require.ErrorIs(t, err, migration.ErrTarget)
	require.ErrorContains(t, err, `interface "blue"`)
	require.ErrorContains(t, err, "DHCP")

	other.Devices.Interfaces = other.Devices.Interfaces[:1]
	_, err = migration.TargetDomain(srcVMI, nil, src, other, store)
	require.ErrorIs(t, err, migration.ErrTarget)
	require.ErrorContains(t, err, `interface "blue"`)
}

// TestTargetDomainSRIOV: the source's VF is dropped from the target
// domain, the target's own is returned to attach after the switch-over.
func TestTargetDomainSRIOV(t *testing.T) {
	vf := func(bus uint) libvirtxml.DomainHostdev {
		return libvirtxml.DomainHostdev{Alias: &libvirtxml.DomainAlias{Name: "ua-sriov-vf"}, SubsysPCI: &libvirtxml.DomainHostdevSubsysPCI{
			Source: &libvirtxml.DomainHostdevSubsysPCISource{Address: &libvirtxml.DomainAddressPCI{Bus: &bus}}}}
	}
	other := vf(3)
	other.Alias = &libvirtxml.DomainAlias{Name: "ua-hostdev-gpu"}
	src := &libvirtxml.Domain{Devices: &libvirtxml.DomainDeviceList{Hostdevs: []libvirtxml.DomainHostdev{vf(1), other}}}
	tgt := &libvirtxml.Domain{Devices: &libvirtxml.DomainDeviceList{Hostdevs: []libvirtxml.DomainHostdev{vf(2), other}}}
	vmi := loadVMI(t, strings.Replace(head, "%s", "", 1)+"      - {name: default, masquerade: {}}\n      - {name: vf, sriov: {}}\n"+
		"  networks:\n  - {name: default, pod: {}}\n  - {name: vf, multus: {networkName: vf}}\n")
	out, err := migration.TargetDomain(vmi, nil, src, tgt, nil)
	require.NoError(t, err)
	require.Equal(t, []libvirtxml.DomainHostdev{other}, out.Domain.Devices.Hostdevs)
	require.Equal(t, []libvirtxml.DomainHostdev{vf(2)}, out.Attach)
}

type updates []string

func (u *updates) UpdateDevice(_ context.Context, x string) error {
	*u = append(*u, x)
	return nil
}

// TestRefreshLinks: each named interface is set down, then back up, with
// the rest of its XML unchanged.
func TestRefreshLinks(t *testing.T) {
	vmi := loadVMI(t, strings.Replace(threeVMI, "%s", "", 1))
	dom, _ := podDomain(t, vmi, binding.InterfaceEthernet, false, "eth0", "net1", "net2")
	var u updates
	require.NoError(t, migration.RefreshLinks(context.Background(), &u, dom, []string{"blue"}))
	require.Len(t, u, 2)
	blue := ifaceByAlias(t, dom, "blue")
	for i, state := range []string{"down", "up"} {
		var got libvirtxml.DomainInterface
		require.NoError(t, got.Unmarshal(u[i]))
		require.Equal(t, state, got.Link.State)
		got.Link, got.XMLName = nil, blue.XMLName
		require.Equal(t, blue, got)
	}
	err := migration.RefreshLinks(context.Background(), &u, dom, []string{"nosuch"})
	require.ErrorIs(t, err, migration.ErrTarget)
	require.ErrorContains(t, err, `interface "nosuch"`)
}

// TestTargetDomainNotMigratable: TargetDomain checks the VMI first.
func TestTargetDomainNotMigratable(t *testing.T) {
	vmi := loadVMI(t, strings.Replace(head, "%s", "", 1)+"      - {name: default, bridge: {}}\n  networks:\n  - {name: default, pod: {}}\n")
	dom := &libvirtxml.Domain{}
	_, err := migration.TargetDomain(vmi, nil, dom, dom, nil)
	var nm *migration.NotMigratableError
	require.ErrorAs(t, err, &nm)
}

// TestTargetDomainLinkDown: an interface whose spec state is down keeps
// its link down: it is not refreshed.
func TestTargetDomainLinkDown(t *testing.T) {
	m := strings.Replace(strings.Replace(threeVMI, "%s", "", 1), "{name: blue, bridge: {}}", "{name: blue, bridge: {}, state: down}", 1)
	vmi := loadVMI(t, m)
	src, store := podDomain(t, vmi, binding.InterfaceEthernet, false, "eth0", "net1", "net2")
	out, err := migration.TargetDomain(vmi, nil, src, src, store)
	require.NoError(t, err)
	require.Empty(t, out.Refresh)
}

// TestTargetDomainOtherAttachmentType: the source pod's launcher renders
// one interface type (bridge: it has CAP_NET_ADMIN) and the target's the
// other (ethernet: it has not), or the other way round; the destination
// domain's interfaces are attached as the target pod's domain attaches
// them (type, bridge, tap), with the source's MAC, PCI address and model,
// and name no link of the source pod (source bridge / target ethernet
// used to keep the source pod's bridge name).
func TestTargetDomainOtherAttachmentType(t *testing.T) {
	for _, tc := range []struct{ src, tgt binding.InterfaceType }{
		{binding.InterfaceBridge, binding.InterfaceEthernet},
		{binding.InterfaceEthernet, binding.InterfaceBridge},
	} {
		t.Run(string(tc.src)+" to "+string(tc.tgt), func(t *testing.T) {
			srcVMI := loadVMI(t, strings.Replace(threeVMI, "%s", "", 1))
			src, _ := podDomain(t, srcVMI, tc.src, false, "eth0", "net1", "net2")
			tgtVMI := loadVMI(t, strings.Replace(threeVMI, "%s", ", annotations: {"+api.PodInterfaceNamesAnnotation+": hashed}", 1))
			for _, n := range []string{"default", "blue", "red"} {
				tgtVMI.Status.Interfaces = append(tgtVMI.Status.Interfaces, api.InterfaceStatus{Name: n, MAC: ifaceByAlias(t, src, n).MAC.Address})
			}
			tgt, store := podDomain(t, tgtVMI, tc.tgt, true, "eth0", api.HashedPodInterface("blue"), api.HashedPodInterface("red"))
			out, err := migration.TargetDomain(tgtVMI, nil, src, tgt, store)
			require.NoError(t, err)
			for _, n := range []string{"default", "blue", "red"} {
				s, g, w := ifaceByAlias(t, src, n), ifaceByAlias(t, out.Domain, n), ifaceByAlias(t, tgt, n)
				require.Equal(t, w.Source, g.Source, "%s is attached as the target pod's domain attaches it", n)
				require.Equal(t, w.Target, g.Target, "%s takes the target pod's tap", n)
				require.Equal(t, s.MAC, g.MAC)
				require.Equal(t, s.Address, g.Address)
				require.Equal(t, s.Model, g.Model)
			}
			x, err := out.Domain.Marshal()
			require.NoError(t, err)
			for _, l := range []string{"k6t-net1", "k6t-net2", "tap1", "tap2", `type="` + string(tc.src) + `"`} {
				require.NotContains(t, x, `"`+strings.Trim(l, `"`)+`"`, "no link or type of the source pod")
			}
		})
	}
}

// TestTargetDomainHostileSource: a source domain that could put two NICs
// on one tap or skip the MAC guard is refused, naming the interface: two
// interfaces of one alias, an interface whose alias names no interface of
// the VMI (or is not ua-<name>), a source or target interface without
// <mac>, and two target interfaces of one alias.
func TestTargetDomainHostileSource(t *testing.T) {
	vmi := loadVMI(t, strings.Replace(threeVMI, "%s", "", 1))
	for _, tc := range []struct {
		name       string
		src, tgt   func(d *libvirtxml.DomainDeviceList)
		iface, why string
	}{
		{name: "two source interfaces of one alias", src: func(d *libvirtxml.DomainDeviceList) {
			d.Interfaces = append(d.Interfaces, d.Interfaces[1])
		}, iface: "blue", why: "two interfaces of alias ua-blue"},
		{name: "two source interfaces of one alias, the copy first", src: func(d *libvirtxml.DomainDeviceList) {
			dup := d.Interfaces[1]
			dup.Address = nil
			d.Interfaces = append([]libvirtxml.DomainInterface{dup}, d.Interfaces...)
		}, iface: "blue", why: "two interfaces of alias ua-blue"},
		{name: "alias of no VMI interface", src: func(d *libvirtxml.DomainDeviceList) {
			d.Interfaces[2].Alias = &libvirtxml.DomainAlias{Name: "ua-ghost"}
		}, iface: "ghost", why: "the VMI no such interface"},
		{name: "alias not ua-", src: func(d *libvirtxml.DomainDeviceList) {
			d.Interfaces[2].Alias = &libvirtxml.DomainAlias{Name: "net0"}
		}, iface: "source domain's interface 2", why: `its alias ("net0") is not ua-<name>`},
		{name: "no alias", src: func(d *libvirtxml.DomainDeviceList) {
			d.Interfaces[2].Alias = nil
		}, iface: "source domain's interface 2", why: "its alias (none)"},
		{name: "source without mac", src: func(d *libvirtxml.DomainDeviceList) {
			d.Interfaces[1].MAC = nil
		}, iface: "blue", why: "no <mac>"},
		{name: "target without mac", tgt: func(d *libvirtxml.DomainDeviceList) {
			d.Interfaces[1].MAC = nil
		}, iface: "blue", why: "no <mac>"},
		{name: "two target interfaces of one alias", tgt: func(d *libvirtxml.DomainDeviceList) {
			d.Interfaces = append(d.Interfaces, d.Interfaces[1])
		}, iface: "blue", why: "two interfaces of alias ua-blue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, _ := podDomain(t, vmi, binding.InterfaceEthernet, false, "eth0", "net1", "net2")
			tgt, store := podDomain(t, vmi, binding.InterfaceEthernet, false, "eth0", "net1", "net2")
			require.Equal(t, "ua-blue", src.Devices.Interfaces[1].Alias.Name)
			if tc.src != nil {
				tc.src(src.Devices)
			}
			if tc.tgt != nil {
				tc.tgt(tgt.Devices)
			}
			_, err := migration.TargetDomain(vmi, nil, src, tgt, store)
			require.ErrorIs(t, err, migration.ErrTarget)
			require.ErrorContains(t, err, fmt.Sprintf("interface %q", tc.iface))
			require.ErrorContains(t, err, tc.why)
		})
	}
}
