package phase1_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/binding/masquerade"
	"github.com/virtnet/virtnet/netdriver"
	"github.com/virtnet/virtnet/netdriver/intercept"
	"github.com/virtnet/virtnet/netdriver/kernel"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// foreignTap makes a persistent tap in ns owned by uid:uid, as another
// program would.
func foreignTap(t *testing.T, ns *testutil.NS, name string, uid uint32) {
	t.Helper()
	require.NoError(t, ns.Do(func() error {
		return netlink.LinkAdd(&netlink.Tuntap{LinkAttrs: netlink.LinkAttrs{Name: name}, Mode: netlink.TUNTAP_MODE_TAP, Owner: uid, Group: uid})
	}))
}

func addAddr(t *testing.T, ns *testutil.NS, link, cidr string) {
	t.Helper()
	a, err := netlink.ParseAddr(cidr)
	require.NoError(t, err)
	require.NoError(t, ns.Handle.AddrAdd(mustNL(t, ns, link), a))
}

// linkDump is what the tests compare of a namespace's links: name, type,
// master, alias, MAC, addresses.
func linkDump(t *testing.T, ns *testutil.NS) map[string][]string {
	t.Helper()
	links, err := ns.Handle.LinkList()
	require.NoError(t, err)
	byIndex := map[int]string{}
	for _, l := range links {
		byIndex[l.Attrs().Index] = l.Attrs().Name
	}
	out := map[string][]string{}
	for _, l := range links {
		a := l.Attrs()
		d := []string{l.Type(), "master=" + byIndex[a.MasterIndex], "alias=" + a.Alias, fmt.Sprintf("altnames=%q", a.AltNames), a.HardwareAddr.String()}
		addrs, err := ns.Handle.AddrList(l, netlink.FAMILY_ALL)
		require.NoError(t, err)
		for _, ad := range addrs {
			if ad.IP.IsGlobalUnicast() || ad.IP.To4() != nil {
				d = append(d, ad.IPNet.String())
			}
		}
		out[a.Name] = d
	}
	return out
}

// TestForeignLinksKeptKernel: links under phase1's names that phase1 did
// not create (a root-owned tap0, a k6t-eth0 bridge with its own address
// and port, a 107:107 tap with an address) are refused before any change,
// and neither the rollback nor Cleanup deletes or changes them.
func TestForeignLinksKeptKernel(t *testing.T) {
	for _, tc := range []struct {
		name  string
		yaml  string
		cfg   testutil.PodConfig
		setup func(t *testing.T, pod *testutil.Pod)
		link  string
	}{
		{name: "masquerade, tap0 owned by root", yaml: masqueradeVMI, link: "tap0",
			setup: func(t *testing.T, pod *testutil.Pod) { foreignTap(t, pod.Pod, "tap0", 0) }},
		{name: "bridge, tap0 owned by root", yaml: bridgeVMI, cfg: testutil.PodConfig{NoIPAM: true}, link: "tap0",
			setup: func(t *testing.T, pod *testutil.Pod) { foreignTap(t, pod.Pod, "tap0", 0) }},
		{name: "masquerade, k6t-eth0 with its own address and port", yaml: masqueradeVMI, link: "k6t-eth0",
			setup: func(t *testing.T, pod *testutil.Pod) {
				require.NoError(t, pod.Pod.Handle.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "k6t-eth0"}}))
				addAddr(t, pod.Pod, "k6t-eth0", "192.168.77.1/24")
				foreignTap(t, pod.Pod, "port9", 0)
				require.NoError(t, pod.Pod.Handle.LinkSetMaster(mustNL(t, pod.Pod, "port9"), mustNL(t, pod.Pod, "k6t-eth0")))
			}},
		{name: "masquerade, tap0 owned by 107 with an address", yaml: masqueradeVMI, link: "tap0",
			setup: func(t *testing.T, pod *testutil.Pod) {
				foreignTap(t, pod.Pod, "tap0", 107)
				addAddr(t, pod.Pod, "tap0", "192.168.78.1/24")
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testutil.NewPodWith(t, tc.cfg)
			tc.setup(t, pod)
			before := linkDump(t, pod.Pod)
			vmi := testutil.LoadVMI(t, tc.yaml)
			s := testutil.NewStore(t)
			err := phase1.Run(context.Background(), vmi, pod.Pod.Path, s, phase1.Options{})
			var fe *binding.ForeignLinkError
			require.ErrorAs(t, err, &fe)
			require.Equal(t, tc.link, fe.Name)
			require.Equal(t, before, linkDump(t, pod.Pod), "refused and rolled back: the foreign link is as it was")
			require.NoError(t, phase1.Cleanup(context.Background(), vmi, pod.Pod.Path, s, phase1.Options{}))
			require.Equal(t, before, linkDump(t, pod.Pod), "Cleanup leaves the foreign link alone")
		})
	}
}

// TestCleanupKeepsReplacedLinkKernel: a tap that replaced phase1's after a
// successful run (same name and owner, no mark) survives Cleanup, which
// still removes phase1's own bridge.
func TestCleanupKeepsReplacedLinkKernel(t *testing.T) {
	pod := testutil.NewPod(t)
	vmi := testutil.LoadVMI(t, masqueradeVMI)
	s := realRun(t, vmi, pod)
	require.Equal(t, []string{binding.Mark(netdriver.TypeTuntap, uid, "default")}, mustNL(t, pod.Pod, "tap0").Attrs().AltNames, "phase1 marks its tap")
	require.Equal(t, []string{binding.Mark(netdriver.TypeBridge, uid, "default")}, mustNL(t, pod.Pod, "k6t-eth0").Attrs().AltNames, "phase1 marks its bridge")
	require.Empty(t, mustNL(t, pod.Pod, "tap0").Attrs().Alias, "the alias stays free (the binding plugins' hand-off)")
	require.NoError(t, pod.Pod.Handle.LinkDel(mustNL(t, pod.Pod, "tap0")))
	foreignTap(t, pod.Pod, "tap0", 107)
	addAddr(t, pod.Pod, "tap0", "192.168.78.1/24")
	require.NoError(t, phase1.Cleanup(context.Background(), vmi, pod.Pod.Path, s, phase1.Options{}))
	d := linkDump(t, pod.Pod)
	require.Contains(t, d, "tap0", "the foreign tap survives")
	require.Contains(t, d["tap0"], "192.168.78.1/24")
	require.NotContains(t, d, "k6t-eth0", "phase1's bridge is gone")
}

// TestLostCacheKernel: after a run whose cache was then deleted, a new
// run refuses the pod link phase1 already prepared (enslaved to
// k6t-eth0, or next to phase1's bridge and tap) with binding.ErrPrepared
// and changes nothing.
func TestLostCacheKernel(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		cfg  testutil.PodConfig
	}{
		{"bridge without IPAM", bridgeVMI, testutil.PodConfig{NoIPAM: true}},
		{"masquerade", masqueradeVMI, testutil.PodConfig{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testutil.NewPodWith(t, tc.cfg)
			vmi := testutil.LoadVMI(t, tc.yaml)
			s := realRun(t, vmi, pod)
			require.NoError(t, os.RemoveAll(s.Root()))
			before := linkDump(t, pod.Pod)
			err := phase1.Run(context.Background(), vmi, pod.Pod.Path, s, phase1.Options{})
			require.ErrorIs(t, err, binding.ErrPrepared)
			var ple *binding.PodLinkError
			require.ErrorAs(t, err, &ple)
			require.Equal(t, "eth0", ple.Name)
			var pe *phase1.Error
			require.ErrorAs(t, err, &pe)
			require.Equal(t, phase1.StepDiscover, pe.Step)
			require.Equal(t, before, linkDump(t, pod.Pod))
			_, err = s.ReadProgress(uid, "default")
			require.Error(t, err, "nothing recorded")
		})
	}
}

// TestNetnsPathNotNamespace: a netns path that is not a network namespace
// fails before anything is locked or changed, with an error saying what
// the path is.
func TestNetnsPathNotNamespace(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	for _, tc := range []struct{ path, what string }{
		{file, "a regular file"},
		{dir, "a directory"},
		{fifo, "a FIFO"},
		{"/proc/self/ns/mnt", "a mount namespace"},
		{"/proc/self/ns/uts", "a UTS namespace"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			s := testutil.NewStore(t)
			vmi := testutil.LoadVMI(t, bridgeVMI)
			for _, f := range []func() error{
				func() error { return phase1.Run(context.Background(), vmi, tc.path, s, phase1.Options{}) },
				func() error { return phase1.Cleanup(context.Background(), vmi, tc.path, s, phase1.Options{}) },
			} {
				err := f()
				require.ErrorIs(t, err, phase1.ErrNotNamespace)
				require.Contains(t, err.Error(), tc.path+" is "+tc.what+", not a network namespace")
				var pe *phase1.Error
				require.ErrorAs(t, err, &pe)
				require.Equal(t, phase1.StepOpen, pe.Step)
			}
			require.NoDirExists(t, s.Root(), "nothing written")
		})
	}
}

// procNetns returns /proc/self/task/<tid>/ns/net of a thread inside ns,
// valid until the test ends.
func procNetns(t *testing.T, ns *testutil.NS) string {
	t.Helper()
	var procPath string
	release := make(chan struct{})
	ready := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = ns.Do(func() error {
			procPath = "/proc/self/task/" + strconv.Itoa(syscall.Gettid()) + "/ns/net"
			close(ready)
			<-release
			return nil
		})
	}()
	<-ready
	t.Cleanup(func() { close(release); <-done })
	return procPath
}

// TestNamespaceLockAcrossPaths: the namespace's lock holds however the
// namespace is named: while a run of one VMI holds it through
// /var/run/netns/<name>, a run of another VMI through /proc/<tid>/ns/net
// of a thread inside it waits (and gives up with ErrLocked).
func TestNamespaceLockAcrossPaths(t *testing.T) {
	pod := testutil.NewPodWith(t, testutil.PodConfig{NoIPAM: true})
	procPath := procNetns(t, pod.Pod)
	s := testutil.NewStore(t)
	nl, err := kernel.Open(pod.Pod.Path)
	require.NoError(t, err)
	defer nl.Close()
	inside, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	holder := &intercept.Driver{Inner: nl, Before: func(intercept.Call) error {
		once.Do(func() { close(inside); <-release })
		return nil
	}}
	other := testutil.LoadVMI(t, strings.Replace(bridgeVMI, uid, "another-vmi", 1))
	held := make(chan error, 1)
	go func() {
		held <- phase1.Run(context.Background(), other, pod.Pod.Path, s, phase1.Options{Driver: holder, KeepOnFailure: true})
	}()
	<-inside
	vmi := testutil.LoadVMI(t, bridgeVMI)
	err = phase1.Run(context.Background(), vmi, procPath, s, phase1.Options{LockWait: -1})
	close(release)
	require.ErrorIs(t, err, phase1.ErrLocked)
	require.Contains(t, err.Error(), "network namespace "+procPath)
	require.NoError(t, <-held)
}

// TestNamespaceFileFlockNoDoS: a process that flocks the namespace file
// (/var/run/netns/<name>, mode 0444: any local user can open it) or its
// /proc/<tid>/ns/net (any process in the pod can) holds no phase1 run
// off: Run and Cleanup take their locks in the store, which only root
// can open, and go through without waiting.
func TestNamespaceFileFlockNoDoS(t *testing.T) {
	for _, via := range []string{"netns", "proc"} {
		t.Run(via, func(t *testing.T) {
			pod := testutil.NewPodWith(t, testutil.PodConfig{NoIPAM: true})
			p := pod.Pod.Path
			if via == "proc" {
				p = procNetns(t, pod.Pod)
			}
			f, err := os.Open(p)
			require.NoError(t, err)
			defer f.Close()
			require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB), "flock %s", p)
			s := testutil.NewStore(t)
			vmi := testutil.LoadVMI(t, bridgeVMI)
			require.NoError(t, phase1.Run(context.Background(), vmi, pod.Pod.Path, s, phase1.Options{LockWait: -1}))
			require.NotNil(t, mustNLMaybe(pod.Pod, "k6t-eth0"))
			require.NoError(t, phase1.Cleanup(context.Background(), vmi, pod.Pod.Path, s, phase1.Options{LockWait: -1}))
			require.Nil(t, mustNLMaybe(pod.Pod, "k6t-eth0"))
			ents, err := os.ReadDir(s.Root())
			require.NoError(t, err)
			require.Empty(t, ents, "no lock file or record left")
		})
	}
}

func mustNLMaybe(ns *testutil.NS, name string) netlink.Link {
	l, err := ns.Handle.LinkByName(name)
	if err != nil {
		return nil
	}
	return l
}

// TestMasqueradeOverlapKernel: on a pod whose IP lies in the default VM
// network 10.0.2.0/24 (as AWS VPC CNI pods can), masquerade is refused
// with a masquerade.OverlapError before any change to the namespace.
func TestMasqueradeOverlapKernel(t *testing.T) {
	pod := testutil.NewPodWith(t, testutil.PodConfig{CIDR: "10.0.2.15/24", Gateway: "10.0.2.1"})
	before := linkDump(t, pod.Pod)
	s := testutil.NewStore(t)
	err := phase1.Run(context.Background(), testutil.LoadVMI(t, masqueradeVMI), pod.Pod.Path, s, phase1.Options{})
	var oe *masquerade.OverlapError
	require.ErrorAs(t, err, &oe)
	require.Equal(t, "vmNetworkCIDR", oe.Field)
	require.Equal(t, "10.0.2.0/24", oe.Network.String())
	require.Contains(t, err.Error(), "10.0.2.15/24")
	require.Equal(t, before, linkDump(t, pod.Pod), "nothing changed")
	_, err = s.ReadProgress(uid, "default")
	require.Error(t, err, "nothing recorded")
}
