package phase2_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/phase2"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// TestStatusKubeVirt: Status computes, for each case of testdata/status
// (a VMI with its previous status.interfaces, a domain XML, the pod IPs
// and a guest agent report), the status.interfaces that KubeVirt v1.9.0's
// virt-handler computed from the same inputs (kubevirt-v1.9.0.json: the
// answer of KubeVirt's own NetStat.UpdateStatus, run outside this
// repository; testdata/status/README.md), field
// for field and in the same order.
func TestStatusKubeVirt(t *testing.T) {
	dirs, err := filepath.Glob("testdata/status/*/vmi.json")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(dirs), 5)
	for _, f := range dirs {
		dir := filepath.Dir(f)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			read := func(name string) []byte {
				b, err := os.ReadFile(filepath.Join(dir, name))
				if os.IsNotExist(err) {
					return nil
				}
				require.NoError(t, err)
				return b
			}
			vmi, err := api.Decode(read("vmi.json"))
			require.NoError(t, err)
			var podIPs map[string][]string
			require.NoError(t, json.Unmarshal(read("podcache.json"), &podIPs))
			got, err := phase2.Status(phase2.StatusInput{VMI: vmi, Domain: read("domain.xml"), PodIPs: podIPs, GuestAgent: read("guest-agent.json")})
			require.NoError(t, err)

			var want []api.InterfaceStatus
			d := json.NewDecoder(bytes.NewReader(read("kubevirt-v1.9.0.json")))
			d.DisallowUnknownFields() // every field KubeVirt reported is one Status computes
			require.NoError(t, d.Decode(&want))
			if len(want) == 0 {
				want = nil
			}
			require.Equal(t, want, got)
		})
	}
}

// TestStatusBadInput: a domain or guest agent report that does not parse
// is an error naming it; a VMI without interfaces has none.
func TestStatusBadInput(t *testing.T) {
	vmi := &api.VMI{}
	for _, tc := range []struct {
		name       string
		in         phase2.StatusInput
		wantErr    string
		wantLength int
	}{
		{"bad domain", phase2.StatusInput{VMI: vmi, Domain: []byte("<domain>")}, "domain XML", 0},
		{"bad guest agent", phase2.StatusInput{VMI: vmi, Domain: []byte("<domain/>"), GuestAgent: []byte("{")}, "guest agent report", 0},
		{"empty", phase2.StatusInput{VMI: vmi, Domain: []byte("<domain/>"), GuestAgent: []byte(" ")}, "", 0},
		{"no alias", phase2.StatusInput{VMI: vmi, Domain: []byte(`<domain><devices><interface type="ethernet"><mac address="02:00:00:00:00:01"/></interface></devices></domain>`)}, "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := phase2.Status(tc.in)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Len(t, got, tc.wantLength)
		})
	}
}

// TestStatusPodIPs: the pod IPs come from phase1's progress records, the
// bridge binding's without IPv6 (as KubeVirt v1.9.0 reports them), none
// for an interface phase1 has no record of.
func TestStatusPodIPs(t *testing.T) {
	store, err := cache.New(t.TempDir())
	require.NoError(t, err)
	const uid = "5a1e6c2b-0d3f-4e8a-9b7c-6d5e4f3a2b1c"
	vmi := &api.VMI{Metadata: api.ObjectMeta{UID: uid}}
	vmi.Spec.Domain.Devices.Interfaces = []api.Interface{
		{Name: "default", Masquerade: &struct{}{}}, {Name: "blue", Bridge: &struct{}{}}, {Name: "red", Bridge: &struct{}{}}}
	for _, p := range []*cache.Progress{
		{Version: 1, Interface: "default", Network: "default", PodInterface: "eth0", Binding: api.BindingMasquerade, State: cache.Finished,
			PodIPs: []netip.Addr{netip.MustParseAddr("fd00::7"), netip.MustParseAddr("10.244.1.7")}},
		{Version: 1, Interface: "blue", Network: "blue", PodInterface: "pod16477688c0e", Binding: api.BindingBridge, State: cache.Finished,
			PodIPs: []netip.Addr{netip.MustParseAddr("192.168.1.5"), netip.MustParseAddr("fd00:b::5")}},
	} {
		testutil.WriteRecord(t, store, uid, p)
	}
	got, err := phase2.StatusPodIPs(context.Background(), vmi, store)
	require.NoError(t, err)
	require.Equal(t, map[string][]string{"default": {"fd00::7", "10.244.1.7"}, "blue": {"192.168.1.5"}}, got)
}

// FuzzStatus: no domain XML, guest agent report or previous status makes
// Status panic, and at most 10 entries come from the guest agent alone.
func FuzzStatus(f *testing.F) {
	for _, c := range []string{"masquerade-guest-agent", "primary-moved-first", "primary-restored"} {
		dom, _ := os.ReadFile(filepath.Join("testdata/status", c, "domain.xml"))
		ga, _ := os.ReadFile(filepath.Join("testdata/status", c, "guest-agent.json"))
		f.Add(dom, ga, "default", "blue")
	}
	f.Fuzz(func(t *testing.T, dom, ga []byte, prevName, prevMultus string) {
		vmi := &api.VMI{}
		vmi.Spec.Domain.Devices.Interfaces = []api.Interface{{Name: "default", Masquerade: &struct{}{}}, {Name: "blue", Bridge: &struct{}{}}}
		vmi.Spec.Networks = []api.Network{{Name: "default", Pod: &api.PodNetwork{}}, {Name: "blue", Multus: &api.MultusNetwork{NetworkName: "b"}}}
		vmi.Status.Interfaces = []api.InterfaceStatus{{Name: prevName, PodInterfaceName: "eth0"}, {Name: prevMultus, InfoSource: phase2.InfoSourceMultusStatus}}
		got, err := phase2.Status(phase2.StatusInput{VMI: vmi, Domain: dom, GuestAgent: ga, PodIPs: map[string][]string{"default": {"10.244.1.7"}}})
		if err != nil {
			return
		}
		guestOnly := 0
		for _, s := range got {
			if s.Name == "" && s.InfoSource == phase2.InfoSourceGuestAgent {
				guestOnly++
			}
		}
		require.LessOrEqual(t, guestOnly, 10)
	})
}
