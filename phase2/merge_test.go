package phase2_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/domxml"
	"github.com/virtnet/virtnet/phase2"
)

// TestRenderMerges: Render replaces a device the domain has with the same
// alias in place and keeps everything else (a foreign interface, a
// hotplug placeholder), so that rendering twice gives the same domain;
// a domain with two interfaces or two host devices of one alias is
// refused and left as it was.
func TestRenderMerges(t *testing.T) {
	ctx := context.Background()
	vmi := syncVMI(t, "-")
	store := writeRecords(t, syncUID, masqRecord("default", "eth0", "02:1a:2b:3c:4d:5e"), blueRecord)
	items, err := phase2.ReadRecords(ctx, vmi, store, phase2.Options{})
	require.NoError(t, err)
	fresh := func() *libvirtxml.Domain {
		dom, err := domxml.Build(vmi, domxml.Options{})
		require.NoError(t, err)
		return dom
	}
	want := fresh()
	require.NoError(t, phase2.Render(vmi, items, want, binding.RenderOptions{}))
	require.Len(t, want.Devices.Interfaces, 2)

	// Rendered again: the same domain.
	dom := fresh()
	require.NoError(t, phase2.Render(vmi, items, dom, binding.RenderOptions{}))
	require.NoError(t, phase2.Render(vmi, items, dom, binding.RenderOptions{}))
	require.Equal(t, mustMarshal(t, want), mustMarshal(t, dom))

	// A stale device of blue's first, then a foreign one: blue's is
	// replaced where it is, the foreign one kept, eth0's added after them.
	foreign := libvirtxml.DomainInterface{Alias: &libvirtxml.DomainAlias{Name: "ua-placeholder"},
		MAC: &libvirtxml.DomainInterfaceMAC{Address: "02:00:00:00:00:09"}}
	stale := libvirtxml.DomainInterface{Alias: &libvirtxml.DomainAlias{Name: "ua-blue"},
		MAC: &libvirtxml.DomainInterfaceMAC{Address: "02:00:00:00:00:01"}}
	dom = fresh()
	dom.Devices.Interfaces = []libvirtxml.DomainInterface{stale, foreign}
	require.NoError(t, phase2.Render(vmi, items, dom, binding.RenderOptions{}))
	got := dom.Devices.Interfaces
	require.Len(t, got, 3)
	require.Equal(t, want.Devices.Interfaces[1], got[0], "blue's device replaced in place")
	require.Equal(t, foreign, got[1], "the foreign device kept as it was")
	require.Equal(t, want.Devices.Interfaces[0], got[2], "eth0's added after the domain's own")

	for _, tc := range []struct {
		name  string
		twice func(d *libvirtxml.DomainDeviceList)
		err   string
	}{
		{"interfaces", func(d *libvirtxml.DomainDeviceList) {
			d.Interfaces = []libvirtxml.DomainInterface{foreign, foreign}
		}, `two interfaces with alias "ua-placeholder"`},
		{"host devices", func(d *libvirtxml.DomainDeviceList) {
			hd := libvirtxml.DomainHostdev{Alias: &libvirtxml.DomainAlias{Name: "ua-sriov"}}
			d.Hostdevs = []libvirtxml.DomainHostdev{hd, hd}
		}, `two host devices with alias "ua-sriov"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dom := fresh()
			tc.twice(dom.Devices)
			before := mustMarshal(t, dom)
			require.ErrorContains(t, phase2.Render(vmi, items, dom, binding.RenderOptions{}), tc.err)
			require.Equal(t, before, mustMarshal(t, dom), "nothing rendered")
		})
	}
}
