package tapnic_test

import (
	"encoding/xml"
	"testing"

	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/binding/bridge"
	"github.com/virtnet/virtnet/binding/masquerade"
	"github.com/virtnet/virtnet/cache"
)

func renderUint(u uint) *uint { return &u }
func renderBool(b bool) *bool { return &b }

// The bridge and masquerade bindings render their NIC the same way, from
// their records; every case runs for both.
var bindings = []struct {
	method string
	b      binding.Binding
	set    func(*api.Interface)
}{
	{api.BindingBridge, bridge.Binding{}, func(i *api.Interface) { i.Bridge = &struct{}{} }},
	{api.BindingMasquerade, masquerade.Binding{}, func(i *api.Interface) { i.Masquerade = &struct{}{} }},
}

func renderRecord(method string) *cache.Interface {
	rec := &cache.Interface{
		Version: cache.Version, Interface: "default", PodInterface: "eth0", Binding: method,
		Bridge: "k6t-eth0", Tap: "tap0", MAC: cache.MustParseMAC("8e:61:55:c2:4a:bd"), MTU: 1440,
	}
	if method == api.BindingBridge {
		rec.NIC = "eth0-nic"
	}
	return rec
}

func TestRender(t *testing.T) {
	for _, bt := range bindings {
		for _, tc := range renderCases {
			t.Run(bt.method+"/"+tc.name, func(t *testing.T) {
				iface := tc.iface
				iface.Name = "default"
				bt.set(&iface)
				vmi := &api.VMI{}
				vmi.Spec.Domain.Devices.Interfaces = []api.Interface{iface}
				vmi.Spec.Networks = []api.Network{{Name: "default", Pod: &api.PodNetwork{}}}
				if tc.vmi != nil {
					tc.vmi(vmi)
				}
				rec := renderRecord(bt.method)
				if tc.rec != nil {
					tc.rec(rec)
				}
				pairs, err := api.Pairs(vmi)
				require.NoError(t, err)
				dom := &libvirtxml.Domain{}
				in := binding.RenderInput{VMI: vmi, Pair: pairs[0], Record: rec, Options: binding.RenderOptions{InterfaceType: tc.typ}}
				require.NoError(t, bt.b.Render(in, dom))
				require.Len(t, dom.Devices.Interfaces, 1)
				got, err := xml.Marshal(&dom.Devices.Interfaces[0])
				require.NoError(t, err)
				require.Equal(t, tc.want, string(got))
			})
		}
	}
}

var renderCases = []struct {
	name  string
	iface api.Interface
	vmi   func(*api.VMI)
	rec   func(*cache.Interface)
	typ   binding.InterfaceType
	want  string
}{
	{
		name: "source document",
		want: `<interface type="bridge"><mac address="8e:61:55:c2:4a:bd"></mac><source bridge="k6t-eth0"></source>` +
			`<model type="virtio-non-transitional"></model><mtu size="1440"></mtu><rom enabled="no"></rom><alias name="ua-default"></alias></interface>`,
	},
	{
		name: "ethernet",
		typ:  binding.InterfaceEthernet,
		want: `<interface type="ethernet"><mac address="8e:61:55:c2:4a:bd"></mac><target dev="tap0" managed="no"></target>` +
			`<model type="virtio-non-transitional"></model><mtu size="1440"></mtu><rom enabled="no"></rom><alias name="ua-default"></alias></interface>`,
	},
	{
		name:  "boot order, PCI address, e1000e, upper-case MAC",
		iface: api.Interface{Model: "e1000e", BootOrder: renderUint(1), PciAddress: "0000:81:00.0"},
		rec:   func(r *cache.Interface) { r.MAC = cache.MustParseMAC("8E:61:55:C2:4A:BD"); r.MTU = 0 },
		want: `<interface type="bridge"><mac address="8e:61:55:c2:4a:bd"></mac><source bridge="k6t-eth0"></source><boot order="1"></boot>` +
			`<model type="e1000e"></model><alias name="ua-default"></alias>` +
			`<address type="pci" domain="0x0000" bus="0x81" slot="0x00" function="0x0"></address></interface>`,
	},
	{
		name: "multiqueue, transitional",
		vmi: func(v *api.VMI) {
			v.Spec.Domain.CPU = &api.CPU{Cores: 3, Sockets: 2}
			v.Spec.Domain.Devices.NetworkInterfaceMultiQueue = renderBool(true)
			v.Spec.Domain.Devices.UseVirtioTransitional = renderBool(true)
		},
		want: `<interface type="bridge"><mac address="8e:61:55:c2:4a:bd"></mac><source bridge="k6t-eth0"></source>` +
			`<model type="virtio-transitional"></model><driver name="vhost" queues="6"></driver><mtu size="1440"></mtu><rom enabled="no"></rom><alias name="ua-default"></alias></interface>`,
	},
	{
		name:  "multiqueue ignored for e1000",
		iface: api.Interface{Model: "e1000"},
		vmi: func(v *api.VMI) {
			v.Spec.Domain.CPU = &api.CPU{Cores: 4}
			v.Spec.Domain.Devices.NetworkInterfaceMultiQueue = renderBool(true)
		},
		want: `<interface type="bridge"><mac address="8e:61:55:c2:4a:bd"></mac><source bridge="k6t-eth0"></source>` +
			`<model type="e1000"></model><mtu size="1440"></mtu><rom enabled="no"></rom><alias name="ua-default"></alias></interface>`,
	},
	{
		// KubeVirt 1.x (issue 22): state down and acpiIndex, as v1.9's
		// converter renders them; igb is passed as it is.
		name:  "link down, ACPI index, igb",
		iface: api.Interface{Model: "igb", State: api.InterfaceStateDown, ACPIIndex: 3},
		typ:   binding.InterfaceEthernet,
		want: `<interface type="ethernet"><mac address="8e:61:55:c2:4a:bd"></mac><target dev="tap0" managed="no"></target>` +
			`<model type="igb"></model><link state="down"></link><mtu size="1440"></mtu><rom enabled="no"></rom><acpi index="3"></acpi><alias name="ua-default"></alias></interface>`,
	},
	{
		name:  "state up renders no link element",
		iface: api.Interface{State: api.InterfaceStateUp},
		want: `<interface type="bridge"><mac address="8e:61:55:c2:4a:bd"></mac><source bridge="k6t-eth0"></source>` +
			`<model type="virtio-non-transitional"></model><mtu size="1440"></mtu><rom enabled="no"></rom><alias name="ua-default"></alias></interface>`,
	},
}

func TestRenderErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		rec  func(*cache.Interface) *cache.Interface
		typ  binding.InterfaceType
		pci  string
		want string
	}{
		{name: "no record", rec: func(*cache.Interface) *cache.Interface { return nil }, want: "no record"},
		{name: "no MAC", rec: func(r *cache.Interface) *cache.Interface { r.MAC = cache.MAC{}; return r }, want: "mac"},
		{name: "no bridge", rec: func(r *cache.Interface) *cache.Interface { r.Bridge = ""; return r }, want: "bridge"},
		{name: "no tap for ethernet", typ: binding.InterfaceEthernet, rec: func(r *cache.Interface) *cache.Interface { r.Tap = ""; return r }, want: "tap"},
		{name: "unknown interface type", typ: "direct", want: `"direct"`},
		{name: "bad PCI address", pci: "0000:81:00", want: "pciAddress"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmi := &api.VMI{}
			vmi.Spec.Domain.Devices.Interfaces = []api.Interface{{Name: "default", Bridge: &struct{}{}, PciAddress: tc.pci}}
			vmi.Spec.Networks = []api.Network{{Name: "default", Pod: &api.PodNetwork{}}}
			pairs, err := api.Pairs(vmi)
			require.NoError(t, err)
			rec := renderRecord(api.BindingBridge)
			if tc.rec != nil {
				rec = tc.rec(rec)
			}
			dom := &libvirtxml.Domain{}
			err = bridge.Binding{}.Render(binding.RenderInput{VMI: vmi, Pair: pairs[0], Record: rec, Options: binding.RenderOptions{InterfaceType: tc.typ}}, dom)
			require.Error(t, err)
			require.NotContains(t, err.Error(), `"default"`, "the caller names the interface")
			require.Contains(t, err.Error(), tc.want)
			require.Nil(t, dom.Devices)
		})
	}
}
