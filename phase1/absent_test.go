package phase1_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/netdriver/netdrivertest"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// linkNames lists the fake namespace's links.
func linkNames(t *testing.T, f *netdrivertest.Fake) []string {
	t.Helper()
	ls, err := f.LinkList()
	require.NoError(t, err)
	var out []string
	for _, l := range ls {
		out = append(out, l.Name)
	}
	return out
}

// TestAbsentInterface is KubeVirt 1.x's hot-unplug (state: absent, issue
// 22): a VMI whose interface is absent from the start gets nothing for
// it; once prepared, marking it absent removes its bridge, tap and
// records on the next run, whether its pod link is still there or Multus
// already took it away, and leaves the other interfaces as they were.
func TestAbsentInterface(t *testing.T) {
	absent := strings.Replace(threeVMI, "{name: red, bridge: {}}", "{name: red, bridge: {}, state: absent}", 1)
	for _, tc := range []struct {
		name     string
		linkGone bool
	}{{"pod link still there", false}, {"pod link gone", true}} {
		t.Run(tc.name, func(t *testing.T) {
			f := threeInterfaces.Pod()
			s := testutil.NewStore(t)
			require.NoError(t, run(t, testutil.LoadVMI(t, threeVMI), f, s, phase1.Options{}))
			require.Subset(t, linkNames(t, f), []string{"k6t-net2", "tap2", "net2"})
			blue, err := s.ReadInterface(uid, "blue")
			require.NoError(t, err)

			if tc.linkGone {
				// Multus removes the pod link (red's network has no
				// IPAM: the bridge binding kept its name).
				require.NoError(t, f.DeleteLink("net2"))
			}
			vmi := testutil.LoadVMI(t, absent)
			require.NoError(t, run(t, vmi, f, s, phase1.Options{}))
			names := linkNames(t, f)
			require.NotContains(t, names, "k6t-net2")
			require.NotContains(t, names, "tap2")
			_, err = s.ReadInterface(uid, "red")
			require.ErrorIs(t, err, cache.ErrNotExist)
			_, err = s.ReadProgress(uid, "red")
			require.ErrorIs(t, err, cache.ErrNotExist)
			got, err := s.ReadInterface(uid, "blue")
			require.NoError(t, err)
			require.Equal(t, blue, got, "the other interfaces are untouched")
			require.Contains(t, names, "k6t-net1")
			if !tc.linkGone {
				l := mustLink(t, f, "net2")
				require.Empty(t, l.Master, "the pod link is left as the CNI made it")
			}

			// Converged: a further run changes nothing.
			before := testutil.CacheFiles(t, s)
			snap := f.Snapshot()
			require.NoError(t, run(t, vmi, f, s, phase1.Options{}))
			require.Equal(t, before, testutil.CacheFiles(t, s))
			require.Equal(t, snap, f.Snapshot())
		})
	}

	t.Run("absent from the start", func(t *testing.T) {
		f := threeInterfaces.Pod()
		s := testutil.NewStore(t)
		vmi := testutil.LoadVMI(t, absent)
		require.NoError(t, run(t, vmi, f, s, phase1.Options{}))
		require.NotContains(t, linkNames(t, f), "k6t-net2")
		_, err := s.ReadProgress(uid, "red")
		require.ErrorIs(t, err, cache.ErrNotExist)
		pairs, err := api.Pairs(vmi)
		require.NoError(t, err)
		present, gone := api.Present(pairs)
		require.Len(t, present, 2)
		require.Equal(t, "net2", gone[0].PodInterface, "an absent network keeps its pod interface name")
	})
}
