package domxml_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/binding/sriov"
	"github.com/virtnet/virtnet/netdriver"
	"github.com/virtnet/virtnet/netdriver/netdrivertest"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/phase2"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// netRow is one row of the field table for a key of interfaces[] or
// networks[]: the interface's device is the bindings' (phase1 on a
// simulated pod, then phase2.Domain), so these rows are rendered through
// both phases. The base VMI has two interfaces: default (masquerade, pod
// network) and sec (bridge, a Multus network).
type netRow struct {
	path   string
	status string
	// base changes the base VMI for this row (a binding key is compared
	// with another binding); set adds the field.
	base, set func(v *api.VMI)
	// manifest is the whole manifest of a refused row.
	manifest string
	want     []string
}

func sec(v *api.VMI) *api.Interface   { return &v.Spec.Domain.Devices.Interfaces[1] }
func deflt(v *api.VMI) *api.Interface { return &v.Spec.Domain.Devices.Interfaces[0] }

func setBinding(i *api.Interface, f func(*api.Interface)) {
	i.Bridge, i.Masquerade = nil, nil
	f(i)
}

// netRows are the keys of interfaces[] and networks[] (KubeVirt v0.53.2's
// and v1.9.0's schema: TestNetFieldsCoverSchema); interfaces[].tag is in
// fieldRows.
var netRows = []netRow{
	{path: "spec.domain.devices.interfaces[].name", status: "rendered", set: func(v *api.VMI) { sec(v).Name, v.Spec.Networks[1].Name = "blue", "blue" },
		want: []string{"domain/devices/interface[ua-blue]"}},
	{path: "spec.domain.devices.interfaces[].bridge", status: "rendered", base: func(v *api.VMI) { setBinding(deflt(v), func(i *api.Interface) { i.Masquerade = &struct{}{} }) },
		set: func(v *api.VMI) { setBinding(deflt(v), func(i *api.Interface) { i.Bridge = &struct{}{} }) }, want: []string{"domain/devices/interface[ua-default]/mac"}},
	{path: "spec.domain.devices.interfaces[].masquerade", status: "rendered", base: func(v *api.VMI) { setBinding(deflt(v), func(i *api.Interface) { i.Bridge = &struct{}{} }) },
		set: func(v *api.VMI) { setBinding(deflt(v), func(i *api.Interface) { i.Masquerade = &struct{}{} }) }, want: []string{"domain/devices/interface[ua-default]/mac"}},
	{path: "spec.domain.devices.interfaces[].slirp", status: "rendered", set: func(v *api.VMI) { setBinding(deflt(v), func(i *api.Interface) { i.Slirp = &struct{}{} }) },
		want: []string{"domain/devices/interface[ua-default]", "domain/commandline"}},
	{path: "spec.domain.devices.interfaces[].sriov", status: "rendered", set: func(v *api.VMI) { setBinding(sec(v), func(i *api.Interface) { i.SRIOV = &struct{}{} }) },
		want: []string{"domain/devices/interface[ua-sec]", "domain/devices/hostdev[ua-sriov-sec]"}},
	{path: "spec.domain.devices.interfaces[].macvtap", status: "rendered", set: func(v *api.VMI) { setBinding(sec(v), func(i *api.Interface) { i.Macvtap = &struct{}{} }) },
		want: []string{`domain/devices/interface[ua-sec]=type="ethernet"`, "domain/devices/interface[ua-sec]/target"}},
	{path: "spec.domain.devices.interfaces[].passt", status: "rendered", set: func(v *api.VMI) { setBinding(deflt(v), func(i *api.Interface) { i.Passt = &struct{}{} }) },
		want: []string{`domain/devices/interface[ua-default]=type="user"`, `domain/devices/interface[ua-default]/backend=type="passt"`}},
	{path: "spec.domain.devices.interfaces[].passtBinding", status: "rendered", set: func(v *api.VMI) { setBinding(deflt(v), func(i *api.Interface) { i.PasstBinding = &struct{}{} }) },
		want: []string{`domain/devices/interface[ua-default]=type="vhostuser"`, `domain/devices/interface[ua-default]/backend=logFile="/var/run/kubevirt/passt.log"`, `domain/memoryBacking/access=mode="shared"`}},
	{path: "spec.domain.devices.interfaces[].binding", status: "rendered", set: func(v *api.VMI) {
		setBinding(sec(v), func(i *api.Interface) { i.Plugin = &api.PluginBinding{Name: "managed-tap"} })
	}, want: []string{`domain/devices/interface[ua-sec]=type="ethernet"`, `domain/devices/interface[ua-sec]/target=dev="tap1"`}},
	{path: "spec.domain.devices.interfaces[].macAddress", status: "rendered", set: func(v *api.VMI) { sec(v).MacAddress = "02:00:00:00:00:aa" },
		want: []string{`domain/devices/interface[ua-sec]/mac=address="02:00:00:00:00:aa"`}},
	{path: "spec.domain.devices.interfaces[].model", status: "rendered", set: func(v *api.VMI) { sec(v).Model = "igb" },
		want: []string{`domain/devices/interface[ua-sec]/model=type="igb"`}},
	{path: "spec.domain.devices.interfaces[].pciAddress", status: "rendered", set: func(v *api.VMI) { sec(v).PciAddress = "0000:05:00.0" },
		want: []string{`domain/devices/interface[ua-sec]/address=bus="0x05"`}},
	{path: "spec.domain.devices.interfaces[].bootOrder", status: "rendered", set: func(v *api.VMI) { sec(v).BootOrder = ptr(uint(1)) },
		want: []string{`domain/devices/interface[ua-sec]/boot=order="1"`, "domain/devices/interface[ua-sec]/rom"}},
	{path: "spec.domain.devices.interfaces[].acpiIndex", status: "rendered", set: func(v *api.VMI) { sec(v).ACPIIndex = 3 },
		want: []string{`domain/devices/interface[ua-sec]/acpi=index="3"`}},
	{path: "spec.domain.devices.interfaces[].state", status: "rendered", set: func(v *api.VMI) { sec(v).State = api.InterfaceStateDown },
		want: []string{`domain/devices/interface[ua-sec]/link=state="down"`}},
	{path: "spec.domain.devices.interfaces[].ports", status: "rendered", base: func(v *api.VMI) { setBinding(deflt(v), func(i *api.Interface) { i.Passt = &struct{}{} }) },
		set: func(v *api.VMI) {
			setBinding(deflt(v), func(i *api.Interface) { i.Passt = &struct{}{} })
			deflt(v).Ports = []api.Port{{Port: 8080}}
		}, want: []string{`domain/devices/interface[ua-default]/portForward/range=start="8080"`}},
	{path: "spec.domain.devices.interfaces[].portRanges", status: "n/a", set: func(v *api.VMI) {
		deflt(v).PortRanges = []api.PortRange{{Protocol: "TCP", Start: 8000, End: 8010}}
	}},
	{path: "spec.domain.devices.interfaces[].dhcpOptions", status: "n/a", set: func(v *api.VMI) {
		sec(v).DHCPOptions = &api.DHCPOptions{BootFileName: "pxelinux.0", NTPServers: []string{"10.0.0.1"}}
	}},
	{path: "spec.networks[].name", status: "rendered", set: func(v *api.VMI) { sec(v).Name, v.Spec.Networks[1].Name = "blue", "blue" },
		want: []string{"domain/devices/interface[ua-blue]"}},
	{path: "spec.networks[].pod", status: "n/a", set: func(v *api.VMI) {
		v.Spec.Networks[0].Pod = &api.PodNetwork{VMNetworkCIDR: "10.11.0.0/24", VMIPv6NetworkCIDR: "fd10:11::/120"}
	}},
	{path: "spec.networks[].multus", status: "n/a", set: func(v *api.VMI) { v.Spec.Networks[1].Multus = &api.MultusNetwork{NetworkName: "ns2/other"} }},
	{path: "spec.networks[].resourceClaim", status: "refused", manifest: "spec:\n  domain:\n    devices: {interfaces: [{name: d, sriov: {}}]}\n" +
		"  networks: [{name: d, resourceClaim: {claimName: c, requestName: r}}]\n"},
}

const netRowBase = `
kind: VirtualMachineInstance
metadata: {name: row, namespace: default, uid: 00000000-0000-4000-8000-0000000000a1}
spec:
  domain:
    resources: {requests: {memory: 64Mi}}
    firmware: {uuid: ` + standaloneUUID + `}
    devices:
      disks: [{name: root, disk: {bus: virtio}}]
      interfaces: [{name: default, masquerade: {}}, {name: sec, bridge: {}}]
  networks: [{name: default, pod: {}}, {name: sec, multus: {networkName: sec-net}}]
  volumes: [{name: root, containerDisk: {image: quay.io/containerdisks/fedora}}]
`

// netDomain runs both phases for the VMI on a simulated pod (the sec
// network's link is a macvtap when its binding is) and returns the
// domain's elements.
func netDomain(t *testing.T, mutate ...func(*api.VMI)) map[string]string {
	t.Helper()
	n, err := parseXML([]byte(netXML(t, mutate...)))
	require.NoError(t, err)
	return elements(n)
}

// netXML is the domain XML of netDomain.
func netXML(t *testing.T, mutate ...func(*api.VMI)) string {
	t.Helper()
	vmi, err := api.Decode([]byte(netRowBase))
	require.NoError(t, err)
	for _, m := range mutate {
		if m != nil {
			m(vmi)
		}
	}
	api.SetDefaults(vmi)
	require.NoError(t, api.Validate(vmi))
	links := []netdrivertest.SimLink{{Name: "eth0"}, {Name: "net1"}}
	if len(vmi.Spec.Domain.Devices.Interfaces) > 1 && vmi.Spec.Domain.Devices.Interfaces[1].Binding() == api.BindingMacvtap {
		links[1].Type = netdriver.TypeMacvtap
		links[1].NoIPAM = true
	}
	s := testutil.NewStore(t)
	require.NoError(t, phase1.Run(context.Background(), vmi, "", s, phase1.Options{Driver: netdrivertest.SimulatedPod(links...)}))
	dom, err := phase2.Domain(context.Background(), vmi, s, phase2.Options{Render: binding.RenderOptions{Env: sriov.SimulatedEnv(vmi)}})
	require.NoError(t, err)
	x, err := dom.Marshal()
	require.NoError(t, err)
	return x
}

// TestNetFieldTable checks every row of netRows as TestFieldTable checks
// its rows (issue 22 item 2: nothing of interfaces[] and networks[] is
// dropped silently).
func TestNetFieldTable(t *testing.T) {
	for _, r := range netRows {
		t.Run(r.path, func(t *testing.T) {
			switch r.status {
			case "refused":
				_, err := api.Load([]byte("kind: VirtualMachineInstance\nmetadata: {name: row}\n" + r.manifest))
				require.ErrorContains(t, err, strings.ReplaceAll(r.path, "[]", "[0]"))
			case "n/a":
				require.Equal(t, netDomain(t, r.base), netDomain(t, r.base, r.set), "%s must not change the domain", r.path)
			case "rendered":
				base, got := netDomain(t, r.base), netDomain(t, r.base, r.set)
				requireWant(t, r.path, base, got, r.want)
			default:
				t.Fatalf("status %q", r.status)
			}
		})
	}
}

// requireWant checks a rendered row's element paths: each exists with the
// field and, "path=text", its description contains text that the base's
// does not; "path" alone differs from the base's; a path only in the base
// is an element the field removes.
func requireWant(t *testing.T, row string, base, got map[string]string, want []string) {
	t.Helper()
	for _, w := range want {
		path, text, _ := strings.Cut(w, "=")
		desc, ok := got[path]
		if !ok {
			_, inBase := base[path]
			require.True(t, inBase, "%s: no element %s", row, path)
			continue
		}
		require.Contains(t, desc, text, "%s: element %s", row, path)
		if text == "" {
			b, inBase := base[path]
			require.True(t, !inBase || b != desc, "%s: element %s is the same without the field", row, path)
		} else {
			require.NotContains(t, base[path], text, "%s: %s has %q without the field", row, path, text)
		}
	}
}

// TestNetFieldsCoverSchema: every key of KubeVirt's Interface and Network
// (the union of v0.53.2's and v1.9.0's schema that api decodes against)
// has a row, so a key a new KubeVirt release adds fails here until it is
// rendered, refused or listed as not applicable.
func TestNetFieldsCoverSchema(t *testing.T) {
	b, err := os.ReadFile("../api/kubevirt_schema.json")
	require.NoError(t, err)
	var schema struct {
		Types map[string]map[string]string `json:"types"`
	}
	require.NoError(t, json.Unmarshal(b, &schema))
	rows := map[string]bool{}
	for _, r := range netRows {
		rows[r.path] = true
	}
	for _, r := range fieldRows {
		rows[r.path] = true
	}
	for typ, prefix := range map[string]string{"v1.Interface": "spec.domain.devices.interfaces[].", "v1.Network": "spec.networks[]."} {
		keys := schema.Types[typ]
		require.NotEmpty(t, keys, typ)
		for k := range keys {
			require.True(t, rows[prefix+k], "KubeVirt's %s has %q: add a row for %s%s (rendered, refused or n/a) to doc.go and netRows", typ, k, prefix, k)
		}
	}
}

// TestPluginAliasesRenderAsCore: KubeVirt 1.x's spellings of its former
// core methods, binding: {name: passt|macvtap|slirp}, go through the
// registry to virtnet's methods and give the domain the v0.53 spelling
// gives, byte for byte (issue 22 item 3).
func TestPluginAliasesRenderAsCore(t *testing.T) {
	for _, tc := range []struct {
		name  string
		iface func(*api.VMI) *api.Interface
		core  func(*api.Interface)
	}{
		{api.BindingPasst, deflt, func(i *api.Interface) { i.Passt = &struct{}{} }},
		{api.BindingSlirp, deflt, func(i *api.Interface) { i.Slirp = &struct{}{} }},
		{api.BindingMacvtap, sec, func(i *api.Interface) { i.Macvtap = &struct{}{} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			core := netDomain(t, func(v *api.VMI) { setBinding(tc.iface(v), tc.core) })
			plugin := netDomain(t, func(v *api.VMI) {
				setBinding(tc.iface(v), func(i *api.Interface) { i.Plugin = &api.PluginBinding{Name: tc.name} })
			})
			require.Equal(t, core, plugin)
		})
	}
}

// TestStateAndACPIIndexEveryBinding: state down and acpiIndex reach the
// device of every binding that has one (issue 22 item 2), in a domain
// libvirt's schema accepts (except passtBinding's, which libvirt 9.0's
// schema does not know: see passt.TestRenderVhostUser).
func TestStateAndACPIIndexEveryBinding(t *testing.T) {
	for _, tc := range []struct {
		name       string
		iface      func(*api.VMI) *api.Interface
		set        func(*api.Interface)
		want       []string
		noLinkDown bool
	}{
		{"bridge", sec, func(i *api.Interface) { i.Bridge = &struct{}{} }, []string{`domain/devices/interface[ua-sec]/acpi=index="7"`}, false},
		{"masquerade", deflt, func(i *api.Interface) { i.Masquerade = &struct{}{} }, []string{`domain/devices/interface[ua-default]/acpi=index="7"`}, false},
		{"managed-tap", sec, func(i *api.Interface) { i.Plugin = &api.PluginBinding{Name: "managed-tap"} }, []string{`domain/devices/interface[ua-sec]/acpi=index="7"`}, false},
		{"macvtap", sec, func(i *api.Interface) { i.Macvtap = &struct{}{} }, []string{`domain/devices/interface[ua-sec]/acpi=index="7"`}, false},
		{"passt", deflt, func(i *api.Interface) { i.Passt = &struct{}{} }, []string{`domain/devices/interface[ua-default]/acpi=index="7"`}, false},
		{"passtBinding", deflt, func(i *api.Interface) { i.PasstBinding = &struct{}{} }, []string{`domain/devices/interface[ua-default]/acpi=index="7"`}, false},
		{"sriov", sec, func(i *api.Interface) { i.SRIOV = &struct{}{} }, []string{`domain/devices/hostdev[ua-sriov-sec]/acpi=index="7"`}, true},
		{"slirp", deflt, func(i *api.Interface) { i.Slirp = &struct{}{} }, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := netXML(t, func(v *api.VMI) {
				i := tc.iface(v)
				setBinding(i, tc.set)
				i.ACPIIndex = 7
				if !tc.noLinkDown {
					i.State = api.InterfaceStateDown
				}
			})
			n, err := parseXML([]byte(x))
			require.NoError(t, err)
			got := elements(n)
			for _, w := range tc.want {
				path, text, _ := strings.Cut(w, "=")
				require.Contains(t, got[path], text, w)
				if !tc.noLinkDown {
					require.Contains(t, got[strings.TrimSuffix(path, "/acpi")+"/link"], `state="down"`)
				}
			}
			if tc.name == "slirp" {
				require.Contains(t, x, "acpi-index=7")
			}
			if tc.name != "passtBinding" {
				testutil.ValidateDomainXML(t, x)
			}
		})
	}
}
