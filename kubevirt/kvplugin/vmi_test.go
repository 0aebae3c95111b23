package kvplugin

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/internal/names"
)

// TestResolvePodInterfaceNames: the pod interface names come from
// status.interfaces[].podInterfaceName where virt-controller set them (a
// primary user-defined network's "ovn-udn1"), else KubeVirt 1.x's eth0 or
// pod<hash>; the primary's tap is tap0 whatever its pod interface is
// called (KubeVirt v1.9.0's link.GenerateTapDeviceName).
func TestResolvePodInterfaceNames(t *testing.T) {
	vmi := `{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance",
"metadata":{"name":"v","namespace":"default","uid":"8a0c6d1e-3b4f-5a6c-9d7e-1f2a3b4c5d6e"},
"spec":{"domain":{"devices":{"interfaces":[
  {"name":"default","binding":{"name":"virtnet-bridge"}},
  {"name":"blue","binding":{"name":"virtnet-bridge"}}]}},
 "networks":[{"name":"default","pod":{}},{"name":"blue","multus":{"networkName":"blue-net"}}]},
"status":%s}`
	served := func(p string) (string, bool) { m, err := MethodFor(p); return m, err == nil }
	for _, tc := range []struct {
		name, status    string
		primary, second string
	}{
		{"no status", `{}`, "eth0", "pod16477688c0e"},
		{"primary UDN", `{"interfaces":[{"name":"default","podInterfaceName":"ovn-udn1"}]}`, "ovn-udn1", "pod16477688c0e"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Resolve([]byte(fmt.Sprintf(vmi, tc.status)), served)
			require.NoError(t, err)
			require.Len(t, r.Pairs, 2)
			p, s := r.Pairs[0], r.Pairs[1]
			require.Equal(t, tc.primary, p.PodInterface)
			require.True(t, p.Primary())
			require.Equal(t, "tap0", names.Tap(p.PodInterface, p.Primary()))
			require.Equal(t, "k6t-"+tc.primary, names.Bridge(p.PodInterface))
			require.Equal(t, tc.second, s.PodInterface)
			require.Equal(t, api.HashedPodInterface("blue"), s.PodInterface)
			require.False(t, s.Primary())
			require.Equal(t, "tap16477688c0e", names.Tap(s.PodInterface, s.Primary()))
			require.Equal(t, "k6t-16477688c0e", names.Bridge(s.PodInterface))
			require.Equal(t, "16477688c0e-nic", names.NIC(s.PodInterface))
		})
	}
}
