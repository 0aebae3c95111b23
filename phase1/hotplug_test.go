//go:build linux

package phase1_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/netdriver/intercept"
	"github.com/virtnet/virtnet/netdriver/netdrivertest"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// redAbsentVMI is threeVMI with red unplugged (state: absent).
var redAbsentVMI = strings.Replace(threeVMI, "{name: red, bridge: {}}", "{name: red, bridge: {}, state: absent}", 1)

// redLinks are the links of red (pod interface net2): its pod link, bridge
// and tap.
var redLinks = []string{"net2", "k6t-net2", "tap2"}

// othersOf is the part of a snapshot that belongs to the interfaces other
// than the links named: their links, addresses, routes, sysctls, MAC
// learning and NAT.
func othersOf(s netdrivertest.Snapshot, links ...string) netdrivertest.Snapshot {
	mine := func(name string) bool { return slices.Contains(links, name) }
	out := netdrivertest.Snapshot{Addrs: maps.Clone(s.Addrs), Sysctls: map[string]string{}, NAT: s.NAT, TXOff: slices.Clone(s.TXOff)}
	for _, l := range s.Links {
		if !mine(l.Name) {
			out.Links = append(out.Links, l)
		}
	}
	for _, n := range links {
		delete(out.Addrs, n)
	}
	out.TXOff = slices.DeleteFunc(out.TXOff, mine)
	for _, r := range s.Routes {
		if !mine(r.Link) {
			out.Routes = append(out.Routes, r)
		}
	}
	for k, v := range s.Sysctls {
		if !slices.ContainsFunc(links, func(n string) bool { return strings.Contains(k, "/"+n+"/") || strings.Contains(k, "."+n+".") }) {
			out.Sysctls[k] = v
		}
	}
	for _, n := range s.Learning {
		if !mine(n) {
			out.Learning = append(out.Learning, n)
		}
	}
	return out
}

// linkState is the part of a snapshot about the links named: the links,
// their addresses and routes.
func linkState(s netdrivertest.Snapshot, links ...string) []string {
	var out []string
	for _, l := range s.Links {
		if slices.Contains(links, l.Name) {
			out = append(out, fmt.Sprintf("%+v addrs=%v", l, s.Addrs[l.Name]))
		}
	}
	for _, r := range s.Routes {
		if slices.Contains(links, r.Link) {
			out = append(out, fmt.Sprintf("route %+v", r))
		}
	}
	return out
}

// othersRecords drops the records of iface (and the lock files) from a
// cache snapshot.
func othersRecords(files map[string]string, iface string) map[string]string {
	out := recordsOnly(files)
	maps.DeleteFunc(out, func(k, _ string) bool {
		return strings.HasSuffix(k, "-"+iface+".json")
	})
	return out
}

// TestUnplugFaultTouchesOnlyIt is hot-unplug (red set absent on a VMI that
// runs) failed by ENOBUFS at each kernel call in turn, and cancelled at
// each call in turn: the other interfaces' kernel state and records stay
// byte-identical; red's records go last (never gone while its bridge or
// tap is left); and a re-run converges to a clean unplug, red's pod link
// as the CNI left it.
func TestUnplugFaultTouchesOnlyIt(t *testing.T) {
	pristineRed := linkState(netdrivertest.SimulatedPod(threeLinks()...).Snapshot(), redLinks...)
	// A clean unplug: its end state and its number of calls.
	want := netdrivertest.SimulatedPod(threeLinks()...)
	ws := testutil.NewStore(t)
	require.NoError(t, run(t, testutil.LoadVMI(t, threeVMI), want, ws, phase1.Options{}))
	count := &intercept.Driver{Inner: want}
	require.NoError(t, phase1.Run(context.Background(), testutil.LoadVMI(t, redAbsentVMI), "", ws, phase1.Options{Driver: count}))
	r, m := count.Counts()
	calls := r + m
	require.Greater(t, calls, 2, "kernel calls of an unplug")
	wantEnd, wantFiles := want.Snapshot(), recordsOnly(testutil.CacheFiles(t, ws))
	t.Logf("an unplug makes %d kernel calls, each failed in turn", calls)

	for _, how := range []string{"ENOBUFS", "cancel"} {
		for n := 1; n <= calls; n++ {
			t.Run(fmt.Sprintf("%s-%d", how, n), func(t *testing.T) {
				f := netdrivertest.SimulatedPod(threeLinks()...)
				s := testutil.NewStore(t)
				require.NoError(t, run(t, testutil.LoadVMI(t, threeVMI), f, s, phase1.Options{}))
				others, otherFiles := othersOf(f.Snapshot(), redLinks...), othersRecords(testutil.CacheFiles(t, s), "red")

				fd := &intercept.Driver{Inner: f}
				ctx, cancel := context.WithCancel(context.Background())
				c := cancel
				if how != "cancel" {
					c = nil
				}
				hit := faultAt(fd, n, c)
				err := phase1.Run(ctx, testutil.LoadVMI(t, redAbsentVMI), "", s, phase1.Options{Driver: fd})
				cancel()
				require.True(t, *hit)
				require.Error(t, err)
				require.Equal(t, others, othersOf(f.Snapshot(), redLinks...), "the other interfaces' kernel state")
				require.Equal(t, otherFiles, othersRecords(testutil.CacheFiles(t, s), "red"), "the other interfaces' records")
				if _, err := s.ReadProgress(uid, "red"); err != nil {
					require.ErrorIs(t, err, cache.ErrNotExist)
					require.NotContains(t, linkNames(t, f), "k6t-net2", "records go last")
					require.NotContains(t, linkNames(t, f), "tap2", "records go last")
				}

				require.NoError(t, run(t, testutil.LoadVMI(t, redAbsentVMI), f, s, phase1.Options{}), "a re-run converges")
				require.Equal(t, wantEnd, f.Snapshot())
				require.Equal(t, wantFiles, recordsOnly(testutil.CacheFiles(t, s)))
				require.Equal(t, pristineRed, linkState(f.Snapshot(), redLinks...), "red's pod link as the CNI left it")
			})
		}
	}
}

// TestPlugFaultTouchesOnlyIt: plugging red into a VMI that runs, failed
// at each kernel call in turn, leaves the other interfaces' kernel state
// and records byte-identical and red either rolled back to its pod link
// as the CNI left it, with no record; a re-run plugs it.
func TestPlugFaultTouchesOnlyIt(t *testing.T) {
	pristineRed := linkState(netdrivertest.SimulatedPod(threeLinks()...).Snapshot(), redLinks...)
	ref := netdrivertest.SimulatedPod(threeLinks()...)
	rs := testutil.NewStore(t)
	require.NoError(t, run(t, testutil.LoadVMI(t, twoOfThreeVMI), ref, rs, phase1.Options{}))
	count := &intercept.Driver{Inner: ref}
	require.NoError(t, phase1.Run(context.Background(), testutil.LoadVMI(t, threeVMI), "", rs, phase1.Options{Driver: count}))
	r, m := count.Counts()
	calls := r + m
	wantEnd, wantFiles := ref.Snapshot(), recordsOnly(testutil.CacheFiles(t, rs))

	for n := 1; n <= calls; n++ {
		f := netdrivertest.SimulatedPod(threeLinks()...)
		s := testutil.NewStore(t)
		require.NoError(t, run(t, testutil.LoadVMI(t, twoOfThreeVMI), f, s, phase1.Options{}))
		others, otherFiles := othersOf(f.Snapshot(), redLinks...), othersRecords(testutil.CacheFiles(t, s), "red")
		fd := &intercept.Driver{Inner: f}
		hit := faultAt(fd, n, nil)
		err := phase1.Run(context.Background(), testutil.LoadVMI(t, threeVMI), "", s, phase1.Options{Driver: fd})
		require.True(t, *hit, "call %d", n)
		require.Error(t, err, "call %d", n)
		require.Equal(t, others, othersOf(f.Snapshot(), redLinks...), "call %d: the running interfaces' kernel state", n)
		require.Equal(t, otherFiles, othersRecords(testutil.CacheFiles(t, s), "red"), "call %d: their records", n)
		// The failure is red's: red alone is rolled back. It is another
		// interface's re-check: red's plug stands alone and is done.
		requireRedAllOrNone(t, f, s, err, pristineRed, linkState(wantEnd, redLinks...), n)

		require.NoError(t, run(t, testutil.LoadVMI(t, threeVMI), f, s, phase1.Options{}), "call %d: a re-run plugs red", n)
		require.Equal(t, wantEnd, f.Snapshot())
		require.Equal(t, wantFiles, recordsOnly(testutil.CacheFiles(t, s)))
	}
}

// requireRedAllOrNone: after a failed update that plugs red, red is
// either rolled back (no record, its pod link as the CNI left it) or
// plugged (finished, its links as a clean plug leaves them): rolled back
// when the failure is red's own, plugged when it is another interface's
// re-check (red's plug stands alone); either after a cancellation.
func requireRedAllOrNone(t *testing.T, f *netdrivertest.Fake, s *cache.Store, err error, pristine, plugged []string, n int) {
	t.Helper()
	require.Error(t, err)
	pod, perr := s.ReadProgress(uid, "red")
	redsFault := strings.Contains(err.Error(), `interface "red"`)
	canceled := errors.Is(err, context.Canceled)
	if perr != nil {
		require.ErrorIs(t, perr, cache.ErrNotExist, "call %d (%v)", n, err)
		require.True(t, redsFault || canceled, "call %d (%v): red rolled back for another interface's failure", n, err)
		require.Equal(t, pristine, linkState(f.Snapshot(), redLinks...), "call %d: red's pod link as the CNI left it", n)
		return
	}
	require.False(t, redsFault, "call %d (%v): red failed and was kept", n, err)
	require.Equal(t, cache.Finished, pod.State, "call %d", n)
	require.Equal(t, plugged, linkState(f.Snapshot(), redLinks...), "call %d: red plugged", n)
}

// insertedVMI is threeVMI with a network (green) inserted before blue and
// red in spec.networks (its interface last, as KubeVirt appends a
// hot-plugged one), under the metadata line meta.
func insertedVMI(meta string) string {
	s := strings.Replace(threeVMI, "metadata: {name: vmi-three, namespace: default, uid: "+uid+"}", meta, 1)
	s = strings.Replace(s, "      - {name: red, bridge: {}}\n", "      - {name: red, bridge: {}}\n      - {name: green, bridge: {}}\n", 1)
	return strings.Replace(s, "  - {name: blue, multus: {networkName: blue-net}}\n",
		"  - {name: green, multus: {networkName: green-net}}\n  - {name: blue, multus: {networkName: blue-net}}\n", 1)
}

// TestPodInterfaceNamesOnInsert is the criterion for hashed pod interface
// names: the annotation virtnet.io/pod-interface-names, fixed when the VMI
// is made. With ordinal names (the default, KubeVirt v0.53's), a network
// inserted before others while the VMI runs would move their pod
// interfaces: phase1 refuses it before any kernel call, naming the network,
// both names and the annotation. With hashed names the insertion plugs
// the new interface and leaves the others byte-identical.
func TestPodInterfaceNamesOnInsert(t *testing.T) {
	t.Run("ordinal", func(t *testing.T) {
		f := netdrivertest.SimulatedPod(threeLinks()...)
		s := testutil.NewStore(t)
		require.NoError(t, run(t, testutil.LoadVMI(t, threeVMI), f, s, phase1.Options{}))
		before, files := f.Snapshot(), recordsOnly(testutil.CacheFiles(t, s))
		calls := len(f.Calls())
		vmi := testutil.LoadVMI(t, insertedVMI("metadata: {name: vmi-three, namespace: default, uid: "+uid+"}"))
		err := run(t, vmi, f, s, phase1.Options{})
		var pe *phase1.Error
		require.ErrorAs(t, err, &pe)
		require.Equal(t, phase1.StepRead, pe.Step)
		require.Equal(t, "blue", pe.Interface)
		for _, want := range []string{`network "blue"`, "net2", "net1", "virtnet.io/pod-interface-names"} {
			require.Contains(t, err.Error(), want)
		}
		require.Len(t, f.Calls(), calls, "no kernel change")
		require.Equal(t, before, f.Snapshot())
		require.Equal(t, files, recordsOnly(testutil.CacheFiles(t, s)))
	})
	t.Run("hashed", func(t *testing.T) {
		meta := "metadata: {name: vmi-three, namespace: default, uid: " + uid + ", annotations: {virtnet.io/pod-interface-names: hashed}}"
		links := []netdrivertest.SimLink{{Name: "eth0"}, {Name: "pod16477688c0e"}, {Name: "pod" + hashOf("red"), NoIPAM: true}}
		f := netdrivertest.SimulatedPod(links...)
		s := testutil.NewStore(t)
		running := strings.Replace(threeVMI, "metadata: {name: vmi-three, namespace: default, uid: "+uid+"}", meta, 1)
		require.NoError(t, run(t, testutil.LoadVMI(t, running), f, s, phase1.Options{}))
		// Multus adds green's pod link to the running pod.
		f.SeedPodLink(netdrivertest.PodLink{Name: "pod" + hashOf("green"), MTU: 1440,
			MAC: []byte{0x0a, 0x58, 0x0a, 0xf4, 0x03, 0x07}})
		green := []string{"pod" + hashOf("green"), "k6t-" + hashOf("green"), "tap" + hashOf("green")}
		before, files := othersOf(f.Snapshot(), green...), othersRecords(testutil.CacheFiles(t, s), "green")
		require.NoError(t, run(t, testutil.LoadVMI(t, insertedVMI(meta)), f, s, phase1.Options{}))
		require.Equal(t, before, othersOf(f.Snapshot(), green...), "the running interfaces' kernel state")
		require.Equal(t, files, othersRecords(testutil.CacheFiles(t, s), "green"), "their records")
		require.Contains(t, linkNames(t, f), "k6t-"+hashOf("green"))
	})
}

// hashOf is the 11 hex digits of KubeVirt 1.x's pod interface name of a
// network.
func hashOf(network string) string { return strings.TrimPrefix(api.HashedPodInterface(network), "pod") }

// TestUnpluggedDroppedFromSpec: after an unplug KubeVirt removes the
// absent interface from the spec, so the indexes of the interfaces after
// it move. A bridge interface with IPAM keeps its link-local address (the
// DHCP server's, derived from its index when first prepared): the running
// interfaces' kernel state and records stay byte-identical.
func TestUnpluggedDroppedFromSpec(t *testing.T) {
	meta := "metadata: {name: vmi-three, namespace: default, uid: " + uid + ", annotations: {virtnet.io/pod-interface-names: hashed}}"
	hashed := strings.Replace(threeVMI, "metadata: {name: vmi-three, namespace: default, uid: "+uid+"}", meta, 1)
	absent := strings.Replace(hashed, "{name: blue, bridge: {}}", "{name: blue, bridge: {}, state: absent}", 1)
	dropped := strings.Replace(strings.Replace(hashed, "      - {name: blue, bridge: {}}\n", "", 1),
		"  - {name: blue, multus: {networkName: blue-net}}\n", "", 1)
	f := netdrivertest.SimulatedPod(netdrivertest.SimLink{Name: "eth0"}, netdrivertest.SimLink{Name: "pod" + hashOf("blue")},
		netdrivertest.SimLink{Name: "pod" + hashOf("red")})
	s := testutil.NewStore(t)
	require.NoError(t, run(t, testutil.LoadVMI(t, hashed), f, s, phase1.Options{}))
	require.NoError(t, run(t, testutil.LoadVMI(t, absent), f, s, phase1.Options{}))
	red, err := s.ReadInterface(uid, "red")
	require.NoError(t, err)
	require.Equal(t, netip.MustParseAddr("169.254.75.12"), red.ServerIPv4, "red is at index 2")
	before, files := f.Snapshot(), recordsOnly(testutil.CacheFiles(t, s))
	require.NoError(t, run(t, testutil.LoadVMI(t, dropped), f, s, phase1.Options{}))
	require.Equal(t, before, f.Snapshot(), "red now at index 1 keeps its bridge's address")
	require.Equal(t, files, recordsOnly(testutil.CacheFiles(t, s)))
}

// TestUpdateChangesStandAlone: one update of a VMI that runs (default,
// blue, red) unplugs red (state: absent), adds green, whose pod link is
// missing (Multus has not made it), and adds yellow, whose pod link is
// there. Each change stands alone: red is unplugged and yellow plugged,
// and the run fails naming green alone (discover, link not found), with
// nothing of green left; blue and default are byte-identical. Before,
// green's failure returned before red's unplug and yellow's plug. Once
// green's pod link is there, a re-run plugs it.
func TestUpdateChangesStandAlone(t *testing.T) {
	update := strings.Replace(threeVMI, "{name: red, bridge: {}}",
		"{name: red, bridge: {}, state: absent}\n      - {name: green, bridge: {}}\n      - {name: yellow, bridge: {}}", 1)
	update = strings.Replace(update, "  - {name: red, multus: {networkName: red-net}}\n",
		"  - {name: red, multus: {networkName: red-net}}\n  - {name: green, multus: {networkName: green-net}}\n  - {name: yellow, multus: {networkName: yellow-net}}\n", 1)
	// green's pod link (net3) is missing; yellow's (net4) is there.
	f := netdrivertest.SimulatedPod(append(threeLinks(), netdrivertest.SimLink{Name: "net4", NoIPAM: true})...)
	s := testutil.NewStore(t)
	require.NoError(t, run(t, testutil.LoadVMI(t, threeVMI), f, s, phase1.Options{}))
	others := othersOf(f.Snapshot(), "net2", "k6t-net2", "tap2", "net4", "k6t-net4", "tap4")
	files := recordsOnly(testutil.CacheFiles(t, s))
	maps.DeleteFunc(files, func(k, _ string) bool { return strings.Contains(k, "-red.json") })

	err := run(t, testutil.LoadVMI(t, update), f, s, phase1.Options{})
	var pe *phase1.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "green", pe.Interface)
	require.Equal(t, phase1.StepDiscover, pe.Step)
	require.ErrorIs(t, err, phase1.ErrLinkNotFound)
	require.NotContains(t, err.Error(), `interface "yellow"`)

	names := linkNames(t, f)
	require.NotContains(t, names, "k6t-net2", "red unplugged")
	require.NotContains(t, names, "tap2")
	_, err = s.ReadProgress(uid, "red")
	require.ErrorIs(t, err, cache.ErrNotExist, "red's records gone")
	_, err = s.ReadProgress(uid, "green")
	require.ErrorIs(t, err, cache.ErrNotExist, "nothing of green")
	pod, err := s.ReadProgress(uid, "yellow")
	require.NoError(t, err)
	require.Equal(t, cache.Finished, pod.State, "yellow plugged")
	require.Contains(t, names, "tap4")
	require.Equal(t, others, othersOf(f.Snapshot(), "net2", "k6t-net2", "tap2", "net4", "k6t-net4", "tap4"), "default and blue untouched")
	got := recordsOnly(testutil.CacheFiles(t, s))
	maps.DeleteFunc(got, func(k, _ string) bool { return strings.Contains(k, "-yellow.json") })
	require.Equal(t, files, got, "default's and blue's records byte-identical")

	f.SeedPodLink(netdrivertest.PodLink{Name: "net3", MAC: net.HardwareAddr{0x0a, 0x58, 0x0a, 0xf4, 0x01, 0x42}, MTU: 1440})
	require.NoError(t, run(t, testutil.LoadVMI(t, update), f, s, phase1.Options{}), "green plugged once its pod link is there")
	pod, err = s.ReadProgress(uid, "green")
	require.NoError(t, err)
	require.Equal(t, cache.Finished, pod.State)
}
