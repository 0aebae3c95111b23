package passt

import (
	"context"
	"testing"

	"github.com/virtnet/virtnet/netdriver/netdrivertest"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
)

// TestPingGroupFollowsTapOwner: passt runs as the user phase1 gives the
// taps to, so that user's group is the one allowed to ping.
func TestPingGroupFollowsTapOwner(t *testing.T) {
	for _, tc := range []struct {
		name      string
		b         Binding
		owner     int
		wantRange string
	}{
		{"root VMI: root", Binding{}, 0, "0 0"},
		{"non-root VMI: qemu", Binding{}, api.QemuID, "107 107"},
		{"tap owner", Binding{}, 1000, "1000 1000"},
		{"explicit group wins", Binding{PingGroup: 2000}, 1000, "2000 2000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := netdrivertest.NewFake()
			v, p := vmi(t, nil)
			in := input(v, p)
			in.TapOwner = tc.owner
			require.NoError(t, tc.b.Prepare(context.Background(), f, in, nil, nil))
			got, err := f.Sysctl(PingGroupRangeKey)
			require.NoError(t, err)
			require.Equal(t, tc.wantRange, got)
		})
	}
}
