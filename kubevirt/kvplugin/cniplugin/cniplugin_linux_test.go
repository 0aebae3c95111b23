//go:build linux

package cniplugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/kubevirt/kvplugin"
	"github.com/virtnet/virtnet/netdriver"
	"github.com/virtnet/virtnet/netdriver/kernel"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// runDir is a directory under /run (where cacheDir must be), removed when
// the test ends; the cache directory is "cache" inside it.
func runDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/run", "virtnet-test-")
	if errors.Is(err, fs.ErrPermission) {
		testutil.Skip(t, "a writable /run (cacheDir must be under /run): root")
	}
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(d) })
	return filepath.Join(d, "cache")
}

// conf is a configuration of KubeVirt's binding attachment for the pod
// network, with extra keys.
func conf(t *testing.T, cacheDir string, extra map[string]any) []byte {
	t.Helper()
	c := map[string]any{"cniVersion": "1.0.0", "name": "virtnet", "type": "virtnet-binding-cni",
		"binding": "masquerade", "cacheDir": cacheDir, "logLevel": "error",
		"args": map[string]any{"cni": map[string]any{"logicNetworkName": "default"}}}
	for k, v := range extra {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	b, err := json.Marshal(c)
	require.NoError(t, err)
	return b
}

func cmdArgs(containerID, netns string, stdin []byte) *skel.CmdArgs {
	return &skel.CmdArgs{ContainerID: containerID, Netns: netns, IfName: "net1", StdinData: stdin}
}

// code is the CNI error code of err (0 for nil; fails on another error).
func code(t *testing.T, err error) uint {
	t.Helper()
	if err == nil {
		return 0
	}
	var te *types.Error
	require.ErrorAs(t, err, &te)
	return te.Code
}

// quiet runs f with stdout going nowhere (ADD prints its result).
func quiet(t *testing.T, f func() error) error {
	t.Helper()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	require.NoError(t, err)
	defer null.Close()
	saved := os.Stdout
	os.Stdout = null
	defer func() { os.Stdout = saved }()
	return f()
}

func nsID(t *testing.T, path string) (dev, ino uint64) {
	t.Helper()
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat(path, &st))
	return uint64(st.Dev), st.Ino
}

func sysctl(t *testing.T, ns *testutil.NS, key string) string {
	t.Helper()
	d, err := kernel.Open(ns.Path)
	require.NoError(t, err)
	defer d.Close()
	v, err := d.Sysctl(key)
	require.NoError(t, err)
	return v
}

// TestLockHeldTryAgainLater: while another run holds the pod namespace's
// lock, ADD, DEL and CHECK give up after LockWait with CNI error 11 ("try
// again later") and change nothing; a verb whose deadline passed returns
// 11 too. Without a limit they would wait for ever.
func TestLockHeldTryAgainLater(t *testing.T) {
	pod := testutil.NewPod(t)
	dir := runDir(t)
	c := conf(t, dir, nil)
	p := Plugin{LockWait: 20 * time.Millisecond}
	require.NoError(t, quiet(t, func() error { return p.Add(cmdArgs("ctr-1", pod.Pod.Path, c)) }))
	store, err := cache.New(dir)
	require.NoError(t, err)
	dev, ino := nsID(t, pod.Pod.Path)
	held, err := store.LockNamespace(context.Background(), dev, ino, "test")
	require.NoError(t, err)
	links, err := pod.Pod.Handle.LinkList()
	require.NoError(t, err)

	require.Equal(t, uint(types.ErrTryAgainLater), code(t, quiet(t, func() error { return p.Add(cmdArgs("ctr-1", pod.Pod.Path, c)) })), "ADD")
	require.Equal(t, uint(types.ErrTryAgainLater), code(t, quiet(t, func() error {
		return p.Add(cmdArgs("ctr-2", pod.Pod.Path, conf(t, dir, map[string]any{"binding": "bridge", "args": map[string]any{"cni": map[string]any{"logicNetworkName": "blue"}}})))
	})), "ADD of another interface")
	require.Equal(t, uint(types.ErrTryAgainLater), code(t, p.Del(cmdArgs("ctr-1", pod.Pod.Path, c))), "DEL")
	err = p.Check(cmdArgs("ctr-1", pod.Pod.Path, c))
	require.Equal(t, uint(types.ErrTryAgainLater), code(t, err), "CHECK")
	require.Contains(t, err.Error(), "locked")
	after, err := pod.Pod.Handle.LinkList()
	require.NoError(t, err)
	require.Len(t, after, len(links), "nothing changed")
	require.NoError(t, held.Unlock())

	expired := Plugin{Timeout: time.Nanosecond}
	require.Equal(t, uint(types.ErrTryAgainLater), code(t, quiet(t, func() error { return expired.Add(cmdArgs("ctr-1", pod.Pod.Path, c)) })), "ADD out of time")
	require.NoError(t, p.Del(cmdArgs("ctr-1", pod.Pod.Path, c)))
}

// TestConfigStrict: configurations with a misspelt, miscased, repeated or
// unknown key, a cacheDir outside /run, a bad port, CIDR or log level are
// refused with CNI error 7 and a message naming the key, before any
// namespace work (the netns path does not exist).
func TestConfigStrict(t *testing.T) {
	dir := runDir(t)
	good := string(conf(t, dir, nil))
	for _, tc := range []struct {
		name, conf, want string
	}{
		{"misspelt port", strings.Replace(good, `"binding"`, `"ports":[{"prot":80}],"binding"`, 1), `unknown key "ports[0].prot"`},
		{"Ports", strings.Replace(good, `"binding"`, `"Ports":[{"port":80}],"binding"`, 1), `did you mean "ports"`},
		{"TapOwner", strings.Replace(good, `"binding"`, `"TapOwner":0,"binding"`, 1), `did you mean "tapOwner"`},
		{"binding twice", strings.Replace(good, `"binding":"masquerade"`, `"binding":"masquerade","binding":"bridge"`, 1), `"binding" appears twice`},
		{"Binding and binding", strings.Replace(good, `"binding":"masquerade"`, `"binding":"masquerade","Binding":"bridge"`, 1), `differ only in case`},
		{"unknown key", strings.Replace(good, `"binding"`, `"bindng":"x","binding"`, 1), `unknown key "bindng"`},
		{"Port in ports", strings.Replace(good, `"binding"`, `"ports":[{"Port":80}],"binding"`, 1), `did you mean "port"`},
		{"cacheDir elsewhere", string(conf(t, "/etc/virtnet", nil)), `cacheDir "/etc/virtnet"`},
		{"cacheDir relative", string(conf(t, "run/x", nil)), `cacheDir "run/x"`},
		{"cacheDir dotdot", string(conf(t, "/run/../etc/x", nil)), `cacheDir "/run/../etc/x"`},
		{"cacheDir without parent", string(conf(t, "/run/no/such/dir", nil)), `parent /run/no/such`},
		{"port 0", string(conf(t, dir, map[string]any{"ports": []any{map[string]any{"port": 0}}})), "ports[0].port 0"},
		{"protocol", string(conf(t, dir, map[string]any{"ports": []any{map[string]any{"port": 80, "protocol": "SCTP"}}})), `ports[0].protocol "SCTP"`},
		{"vmNetworkCIDR", string(conf(t, dir, map[string]any{"vmNetworkCIDR": "10.0.2.0/33"})), "vmNetworkCIDR"},
		{"logLevel", string(conf(t, dir, map[string]any{"logLevel": "loud"})), `logLevel "loud"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for verb, f := range map[string]func(*skel.CmdArgs) error{"ADD": Plugin{}.Add, "DEL": Plugin{}.Del, "CHECK": Plugin{}.Check} {
				err := f(cmdArgs("ctr-1", "/nonexistent/netns", []byte(tc.conf)))
				require.Equal(t, uint(types.ErrInvalidNetworkConfig), code(t, err), "%s: %v", verb, err)
				require.Contains(t, err.Error(), tc.want, verb)
			}
		})
	}
	require.NoDirExists(t, "/etc/virtnet")
	require.NoDirExists(t, "/run/no")
}

// TestPortStartNarrowed: ADD lowers ip_unprivileged_port_start to 67 only
// for a non-root VMI (tapOwner other than 0), whose sidecar has no
// capabilities, and only for an interface with a DHCP server (IPAM on);
// DEL puts back 1024 once the pod's last interface is gone; a root VMI's
// pod keeps 1024 throughout.
func TestPortStartNarrowed(t *testing.T) {
	const key = "ipv4/ip_unprivileged_port_start"
	for _, tc := range []struct {
		name     string
		tapOwner any
		during   string
	}{{"non-root", nil, "67"}, {"root", 0, "1024"}} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testutil.NewPod(t)
			dir := runDir(t)
			extra := map[string]any{"tapOwner": tc.tapOwner}
			c := conf(t, dir, extra)
			c2 := conf(t, dir, map[string]any{"tapOwner": tc.tapOwner, "binding": "bridge",
				"args": map[string]any{"cni": map[string]any{"logicNetworkName": "blue"}}})
			require.Equal(t, "1024", sysctl(t, pod.Pod, key))
			require.NoError(t, quiet(t, func() error { return Plugin{}.Add(cmdArgs("ctr-1", pod.Pod.Path, c)) }))
			require.Equal(t, tc.during, sysctl(t, pod.Pod, key))
			// A second interface of the pod (KubeVirt 1.x's pod<hash> of
			// network blue, bridge without IPAM).
			testutil.AddVeth(t, pod.Node, "peer1", pod.Pod, api.HashedPodInterface("blue"), 1500)
			require.NoError(t, quiet(t, func() error { return Plugin{}.Add(cmdArgs("ctr-1", pod.Pod.Path, c2)) }))
			require.NoError(t, Plugin{}.Check(cmdArgs("ctr-1", pod.Pod.Path, c)))
			require.NoError(t, Plugin{}.Del(cmdArgs("ctr-1", pod.Pod.Path, c)))
			require.Equal(t, tc.during, sysctl(t, pod.Pod, key), "another interface of the pod is left")
			rec, err := kvplugin.ReadRecord(pod.Pod.Path, "bridge", api.HashedPodInterface("blue"), false)
			require.NoError(t, err)
			require.True(t, rec.Record.IPAMDisabled, "the second interface has no DHCP server")
			require.NoError(t, Plugin{}.Del(cmdArgs("ctr-1", pod.Pod.Path, c2)))
			require.Equal(t, "1024", sysctl(t, pod.Pod, key), "DEL restores")
			// The interface without DHCP alone: nothing to bind.
			require.NoError(t, quiet(t, func() error { return Plugin{}.Add(cmdArgs("ctr-1", pod.Pod.Path, c2)) }))
			require.Equal(t, "1024", sysctl(t, pod.Pod, key), "no DHCP server, no lowering")
			require.NoError(t, Plugin{}.Del(cmdArgs("ctr-1", pod.Pod.Path, c2)))
		})
	}
}

// TestCheckSeesWhatAddRepairs: CHECK fails (naming the repair) when the
// NAT tables were deleted, the gateway address flushed, forwarding turned
// off or the DHCP port made unbindable for the sidecar; ADD repairs each
// and CHECK passes again.
func TestCheckSeesWhatAddRepairs(t *testing.T) {
	pod := testutil.NewPod(t)
	dir := runDir(t)
	c := conf(t, dir, nil)
	args := cmdArgs("ctr-1", pod.Pod.Path, c)
	require.NoError(t, quiet(t, func() error { return Plugin{}.Add(args) }))
	require.NoError(t, Plugin{}.Check(args))
	d, err := kernel.Open(pod.Pod.Path)
	require.NoError(t, err)
	defer d.Close()
	for _, tc := range []struct {
		name, want string
		breakIt    func() error
	}{
		{"NAT deleted", "ApplyNAT", func() error { return d.DeleteNAT(netdriver.IPv4) }},
		{"gateway address flushed", "AddrReplace", func() error {
			addrs, err := d.AddrList("k6t-eth0", netdriver.IPv4)
			if err != nil {
				return err
			}
			for _, a := range addrs {
				if err := d.AddrDel("k6t-eth0", a); err != nil {
					return err
				}
			}
			return nil
		}},
		{"forwarding off", "SetSysctl", func() error { return d.SetSysctl("ipv4/ip_forward", "0") }},
		{"port 67 unbindable", "cannot bind the DHCP port 67", func() error { return d.SetSysctl("ipv4/ip_unprivileged_port_start", "1024") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, tc.breakIt())
			err := Plugin{}.Check(args)
			require.Equal(t, uint(codePhase1), code(t, err), "%v", err)
			require.Contains(t, err.Error(), tc.want)
			require.NoError(t, quiet(t, func() error { return Plugin{}.Add(args) }), "ADD repairs")
			require.NoError(t, Plugin{}.Check(args))
		})
	}
	require.NoError(t, Plugin{}.Del(args))
}

// TestDelStaleNetns: DEL whose netns path is a stale bind mount point (an
// empty file, no longer a namespace) or gone forgets the records and
// succeeds, leaving nothing in the cache directory.
func TestDelStaleNetns(t *testing.T) {
	for _, how := range []string{"empty file", "gone"} {
		t.Run(how, func(t *testing.T) {
			pod := testutil.NewPod(t)
			dir := runDir(t)
			c := conf(t, dir, nil)
			require.NoError(t, quiet(t, func() error { return Plugin{}.Add(cmdArgs("ctr-1", pod.Pod.Path, c)) }))
			stale := filepath.Join(t.TempDir(), "netns")
			if how == "empty file" {
				require.NoError(t, os.WriteFile(stale, nil, 0o444))
			}
			require.NoError(t, Plugin{}.Del(cmdArgs("ctr-1", stale, c)))
			require.Empty(t, entries(t, dir))
			require.NoError(t, Plugin{}.Del(cmdArgs("ctr-1", stale, c)), "again")
		})
	}
}

// TestDelWrongNetns: DEL of one pod's container ID given another pod's
// namespace is refused (permanent, 999): the other pod keeps its bridge,
// tap and NAT table, and the first pod's records stay for a DEL with its
// own namespace.
func TestDelWrongNetns(t *testing.T) {
	a, b := testutil.NewPod(t), testutil.NewPod(t)
	dir := runDir(t)
	c := conf(t, dir, nil)
	require.NoError(t, quiet(t, func() error { return Plugin{}.Add(cmdArgs("ctr-a", a.Pod.Path, c)) }))
	require.NoError(t, quiet(t, func() error { return Plugin{}.Add(cmdArgs("ctr-b", b.Pod.Path, c)) }))
	d, err := kernel.Open(b.Pod.Path)
	require.NoError(t, err)
	defer d.Close()
	nat, err := d.NATRules(netdriver.IPv4)
	require.NoError(t, err)
	require.NotEmpty(t, nat)
	err = Plugin{}.Del(cmdArgs("ctr-a", b.Pod.Path, c))
	require.Equal(t, uint(codePhase1), code(t, err), "%v", err)
	var me *cache.NamespaceMismatchError
	require.True(t, errors.As(err, &me) || strings.Contains(err.Error(), "describe network namespace"), "%v", err)
	after, err := d.NATRules(netdriver.IPv4)
	require.NoError(t, err)
	require.Equal(t, nat, after, "the other pod's NAT stays")
	require.NoError(t, Plugin{}.Check(cmdArgs("ctr-b", b.Pod.Path, c)))
	require.NoError(t, Plugin{}.Del(cmdArgs("ctr-a", a.Pod.Path, c)))
	require.NoError(t, Plugin{}.Del(cmdArgs("ctr-b", b.Pod.Path, c)))
	require.Empty(t, entries(t, dir))
}

// TestKilledAddLeavesNothingAfterDel: what an ADD killed at any point can
// leave on the node (its lock files, a record directory holding only a
// namespace record or temporary files with the pod's IP and MAC) is gone
// after DEL, whatever DEL finds.
func TestKilledAddLeavesNothingAfterDel(t *testing.T) {
	pod := testutil.NewPod(t)
	dir := runDir(t)
	c := conf(t, dir, nil)
	uid := uidFor("ctr-1", "default")
	dev, ino := nsID(t, pod.Pod.Path)
	for _, left := range [][]string{
		{".lock-" + uid},
		{".lock-" + uid, ".lock-netns-" + strings.Join([]string{itoa(dev), itoa(ino)}, "-")},
		{uid + "/.tmp-pod-interface-default.json-1234"},
		{uid + "/netns.json"},
		{uid + "/.tmp-interface-default.json-99", uid + "/netns.json", ".lock-" + uid},
	} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, uid), 0o755))
		for _, f := range left {
			body := `{"podIPs":["10.244.1.7"]}`
			if filepath.Base(f) == "netns.json" {
				body = `{"version":1,"id":"1:2"}`
			}
			require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(body), 0o600))
		}
		require.NoError(t, Plugin{}.Del(cmdArgs("ctr-1", pod.Pod.Path, c)), "%v", left)
		require.Empty(t, entries(t, dir), "%v", left)
	}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// entries lists what is under dir (relative paths), dir itself excluded.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, de os.DirEntry, err error) error {
		if os.IsNotExist(err) && p == dir {
			return filepath.SkipDir
		}
		if err != nil {
			return err
		}
		if p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

// TestSecondAddNewVMNetwork: a second ADD with another vmNetworkCIDR
// leaves the bridge with the new gateway address alone, not the old one
// beside it.
func TestSecondAddNewVMNetwork(t *testing.T) {
	pod := testutil.NewPod(t)
	dir := runDir(t)
	first := conf(t, dir, map[string]any{"vmNetworkCIDR": "10.0.2.0/24"})
	second := conf(t, dir, map[string]any{"vmNetworkCIDR": "10.11.0.0/24"})
	require.NoError(t, quiet(t, func() error { return Plugin{}.Add(cmdArgs("ctr-1", pod.Pod.Path, first)) }))
	require.NoError(t, quiet(t, func() error { return Plugin{}.Add(cmdArgs("ctr-1", pod.Pod.Path, second)) }))
	d, err := kernel.Open(pod.Pod.Path)
	require.NoError(t, err)
	defer d.Close()
	addrs, err := d.AddrList("k6t-eth0", netdriver.IPv4)
	require.NoError(t, err)
	var got []string
	for _, a := range addrs {
		got = append(got, a.String())
	}
	require.Equal(t, []string{"10.11.0.1/24"}, got)
	require.NoError(t, Plugin{}.Check(cmdArgs("ctr-1", pod.Pod.Path, second)))
	require.NoError(t, Plugin{}.Del(cmdArgs("ctr-1", pod.Pod.Path, second)))
}

// TestLogOneValuePerKey: every line the plugin logs (its own and
// phase1's, at debug level) is a JSON object in which no key appears
// twice.
func TestLogOneValuePerKey(t *testing.T) {
	pod := testutil.NewPod(t)
	dir := runDir(t)
	c := conf(t, dir, map[string]any{"logLevel": "debug"})
	r, w, err := os.Pipe()
	require.NoError(t, err)
	saved := os.Stderr
	os.Stderr = w
	err = quiet(t, func() error { return Plugin{}.Add(cmdArgs("ctr-1", pod.Pod.Path, c)) })
	if err == nil {
		err = Plugin{}.Del(cmdArgs("ctr-1", pod.Pod.Path, c))
	}
	os.Stderr = saved
	w.Close()
	require.NoError(t, err)
	out, err := io.ReadAll(r)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Greater(t, len(lines), 3)
	for _, l := range lines {
		dec := json.NewDecoder(strings.NewReader(l))
		tok, err := dec.Token()
		require.NoError(t, err, l)
		require.Equal(t, json.Delim('{'), tok, l)
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			require.NoError(t, err, l)
			require.False(t, seen[k.(string)], "key %q twice in %s", k, l)
			seen[k.(string)] = true
			var v json.RawMessage
			require.NoError(t, dec.Decode(&v), l)
		}
	}
}

// TestGCForgetsGoneAttachments: GC (CNI 1.1) forgets the records of the
// attachments not in cni.dev/valid-attachments and keeps the others;
// afterwards DEL of a valid one leaves cacheDir empty.
func TestGCForgetsGoneAttachments(t *testing.T) {
	a, b := testutil.NewPod(t), testutil.NewPod(t)
	dir := runDir(t)
	c := conf(t, dir, nil)
	require.NoError(t, quiet(t, func() error { return Plugin{}.Add(cmdArgs("ctr-a", a.Pod.Path, c)) }))
	require.NoError(t, quiet(t, func() error { return Plugin{}.Add(cmdArgs("ctr-b", b.Pod.Path, c)) }))
	// Another network sharing the cacheDir (the shipped bridge and
	// masquerade NADs do) lists only its own attachments: none of these.
	other := conf(t, dir, map[string]any{"cniVersion": "1.1.0", "name": "virtnet-other",
		"cni.dev/valid-attachments": []any{}})
	require.NoError(t, Plugin{}.GC(&skel.CmdArgs{StdinData: other}))
	require.NoError(t, Plugin{}.Check(cmdArgs("ctr-a", a.Pod.Path, c)), "another network's GC left ctr-a")
	require.NoError(t, Plugin{}.Check(cmdArgs("ctr-b", b.Pod.Path, c)), "another network's GC left ctr-b")
	gc := conf(t, dir, map[string]any{"cniVersion": "1.1.0",
		"cni.dev/valid-attachments": []any{map[string]any{"containerID": "ctr-b", "ifname": "net1"}}})
	require.NoError(t, Plugin{}.GC(&skel.CmdArgs{StdinData: gc}))
	store, err := cache.New(dir)
	require.NoError(t, err)
	_, err = store.ReadProgress(uidFor("ctr-a", "default"), "default")
	require.ErrorIs(t, err, cache.ErrNotExist, "ctr-a's records are gone")
	require.NoError(t, Plugin{}.Check(cmdArgs("ctr-b", b.Pod.Path, c)), "ctr-b's stay")
	require.NoError(t, Plugin{}.Del(cmdArgs("ctr-b", b.Pod.Path, c)))
	require.NoError(t, Plugin{}.Del(cmdArgs("ctr-a", a.Pod.Path, c)), "DEL after GC")
	require.Empty(t, entries(t, dir))
}

// gcWith runs GC of network "virtnet" in dir with valid as its list.
func gcWith(t *testing.T, p Plugin, dir string, valid ...string) error {
	t.Helper()
	list := []any{}
	for _, id := range valid {
		list = append(list, map[string]any{"containerID": id, "ifname": "net1"})
	}
	return p.GC(&skel.CmdArgs{StdinData: conf(t, dir, map[string]any{"cniVersion": "1.1.0", "cni.dev/valid-attachments": list})})
}

// TestGCNeverCollectsAnAttachmentMidAddOrAddedSince: a GC whose list
// predates an ADD leaves that ADD's attachment, whether the ADD was under
// way when the GC looked at the records (paused inside its namespace
// record's first write, right after it, or inside its last record write,
// then finished while the GC went on) or ran whole after the GC began (a
// repeated ADD of an attachment recorded before, a new attachment); the
// pod's CHECK and DEL then work. Before, the GC waited for the ADD's lock
// and then deleted the records the ADD had just made: CHECK and DEL failed
// for ever and DEL left the bridge, tap and NAT. A gone attachment is
// still collected by the same GC.
func TestGCNeverCollectsAnAttachmentMidAddOrAddedSince(t *testing.T) {
	for _, tc := range []struct{ name, file string }{
		{"before the first rename", "netns.json"},
		{"after the namespace record", "pod-interface-default.json"},
		{"inside the last record write", "pod-interface-default.json#last"},
	} {
		t.Run("mid-ADD "+tc.name, func(t *testing.T) {
			pod, gone := testutil.NewPod(t), testutil.NewPod(t)
			dir := runDir(t)
			c := conf(t, dir, nil)
			require.NoError(t, quiet(t, func() error { return Plugin{}.Add(cmdArgs("ctr-gone", gone.Pod.Path, c)) }))
			file, last := strings.CutSuffix(tc.file, "#last")
			step := cache.WriteTempCreated
			writes := 0
			var once sync.Once
			paused, resume := make(chan struct{}), make(chan struct{})
			adder := Plugin{storeHook: func(s cache.WriteStep, _, path string) error {
				if s != step || filepath.Base(path) != file {
					return nil
				}
				// The progress record is written twice (begun, then
				// finished): the last write is the second.
				if writes++; last && writes < 2 {
					return nil
				}
				once.Do(func() {
					close(paused)
					<-resume
				})
				return nil
			}}
			added := make(chan error, 1)
			go func() { added <- quiet(t, func() error { return adder.Add(cmdArgs("ctr-a", pod.Pod.Path, c)) }) }()
			<-paused
			gc := Plugin{gcLooked: func() {
				close(resume) // the ADD finishes while the GC goes on
				require.NoError(t, <-added)
			}}
			require.NoError(t, gcWith(t, gc, dir))
			require.NoError(t, Plugin{}.Check(cmdArgs("ctr-a", pod.Pod.Path, c)), "the ADD's attachment is whole")
			require.Error(t, Plugin{}.Check(cmdArgs("ctr-gone", gone.Pod.Path, c)), "the gone attachment is collected")
			require.NoError(t, Plugin{}.Del(cmdArgs("ctr-a", pod.Pod.Path, c)))
			require.Empty(t, entries(t, dir))
			links, err := pod.Pod.Handle.LinkList()
			require.NoError(t, err)
			for _, l := range links {
				require.NotEqual(t, "k6t-eth0", l.Attrs().Name, "DEL removed the bridge")
			}
		})
	}
	t.Run("ADDed after the GC began", func(t *testing.T) {
		again, fresh := testutil.NewPod(t), testutil.NewPod(t)
		dir := runDir(t)
		c := conf(t, dir, nil)
		require.NoError(t, quiet(t, func() error { return Plugin{}.Add(cmdArgs("ctr-again", again.Pod.Path, c)) }))
		gc := Plugin{gcLooked: func() {
			require.NoError(t, quiet(t, func() error { return Plugin{}.Add(cmdArgs("ctr-again", again.Pod.Path, c)) }), "ADD again")
			require.NoError(t, quiet(t, func() error { return Plugin{}.Add(cmdArgs("ctr-fresh", fresh.Pod.Path, c)) }), "a new ADD")
		}}
		require.NoError(t, gcWith(t, gc, dir))
		require.NoError(t, Plugin{}.Check(cmdArgs("ctr-again", again.Pod.Path, c)))
		require.NoError(t, Plugin{}.Check(cmdArgs("ctr-fresh", fresh.Pod.Path, c)))
		// Not ADDed since: the next GC collects both.
		require.NoError(t, gcWith(t, Plugin{}, dir))
		require.Empty(t, entries(t, dir))
	})
}

// TestGCRemovesPartialRecordDirectories: what a GC killed inside its
// record deletion (os.RemoveAll takes the files in directory order, the
// namespace record possibly first) or an ADD killed at its first rename
// leaves, a record directory without the namespace record that says whose
// it is, is removed by the next GC of any network, with the lock files.
// Before, every later GC skipped it for ever. A directory another program
// made (not named like this plugin's) is left, and so is one whose
// attachment lock a live run holds.
func TestGCRemovesPartialRecordDirectories(t *testing.T) {
	t.Run("what a killed GC or ADD leaves", func(t *testing.T) {
		pod := testutil.NewPod(t)
		dir := runDir(t)
		c := conf(t, dir, nil)
		uid := func(id string) string { return uidFor(id, "default") }
		require.NoError(t, quiet(t, func() error { return Plugin{}.Add(cmdArgs("ctr-gc-killed", pod.Pod.Path, c)) }))
		// A GC killed right after unlinking the namespace record.
		require.NoError(t, os.Remove(filepath.Join(dir, uid("ctr-gc-killed"), cache.NamespaceFile)))
		for _, f := range []string{
			// A GC killed later: one record left.
			uid("ctr-gc-late") + "/pod-interface-default.json",
			// An ADD killed at its first rename (and one killed before it
			// closed its temporary file: the lock file too).
			uid("ctr-add-killed") + "/.tmp-netns.json-1234",
			uid("ctr-add-killed-2") + "/.tmp-netns.json-99", ".lock-" + uid("ctr-add-killed-2"), ".lock-.attachment-" + uid("ctr-add-killed-2"),
			// A GC killed after the last file, before the directory.
			uid("ctr-gc-empty") + "/",
			// Not this plugin's.
			"some-vmi/pod-interface-default.json",
		} {
			require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755))
			if !strings.HasSuffix(f, "/") {
				require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(`{"version":1}`), 0o600))
			}
		}
		// An ADD under way at its first rename: its lock is held.
		store, err := cache.New(dir)
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, uid("ctr-adding")), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, uid("ctr-adding"), ".tmp-netns.json-7"), nil, 0o600))
		l, err := store.LockAttachment(t.Context(), uid("ctr-adding"))
		require.NoError(t, err)

		other := conf(t, dir, map[string]any{"cniVersion": "1.1.0", "name": "virtnet-other", "cni.dev/valid-attachments": []any{}})
		require.NoError(t, Plugin{}.GC(&skel.CmdArgs{StdinData: other}))
		require.ElementsMatch(t, []string{
			".lock-.attachment-" + uid("ctr-adding"),
			uid("ctr-adding"), uid("ctr-adding") + "/.tmp-netns.json-7",
			"some-vmi", "some-vmi/pod-interface-default.json",
		}, entries(t, dir))
		require.NoError(t, l.Remove())
		require.NoError(t, Plugin{}.GC(&skel.CmdArgs{StdinData: other}))
		require.ElementsMatch(t, []string{"some-vmi", "some-vmi/pod-interface-default.json"}, entries(t, dir))
	})
	// A real ADD (this test binary again) killed with SIGKILL at each step
	// of its first record write, before the rename, and right after it.
	for _, step := range []cache.WriteStep{cache.WriteTempCreated, cache.WriteTempWritten, cache.WriteTempSynced, cache.WriteRenamed} {
		t.Run("ADD killed at "+string(step), func(t *testing.T) {
			pod := testutil.NewPod(t)
			dir := runDir(t)
			c := conf(t, dir, nil)
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), envKillHelper+"=1", envKillStep+"="+string(step),
				envKillNetns+"="+pod.Pod.Path, envKillConf+"="+string(c))
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "helper output: %s", out)
			require.True(t, ee.Sys().(syscall.WaitStatus).Signaled(), "killed: %s", out)
			require.NotEmpty(t, entries(t, dir), "the killed ADD left its record directory")
			require.NoError(t, gcWith(t, Plugin{}, dir))
			require.Empty(t, entries(t, dir))
		})
	}
}

// The test binary is the killed ADD of TestGCRemovesPartialRecordDirectories
// when envKillHelper is set: it runs ADD of ctr-killed in envKillNetns
// with envKillConf and SIGKILLs itself at step envKillStep of its first
// record write (the namespace record's).
const (
	envKillHelper = "VIRTNET_CNIPLUGIN_KILL"
	envKillStep   = "VIRTNET_CNIPLUGIN_KILL_STEP"
	envKillNetns  = "VIRTNET_CNIPLUGIN_KILL_NETNS"
	envKillConf   = "VIRTNET_CNIPLUGIN_KILL_CONF"
)

func TestMain(m *testing.M) {
	if os.Getenv(envKillHelper) != "" {
		p := Plugin{storeHook: func(step cache.WriteStep, _, path string) error {
			if step == cache.WriteStep(os.Getenv(envKillStep)) && filepath.Base(path) == cache.NamespaceFile {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // the signal is on its way
			}
			return nil
		}}
		err := p.Add(cmdArgs("ctr-killed", os.Getenv(envKillNetns), []byte(os.Getenv(envKillConf))))
		fmt.Fprintln(os.Stderr, "helper: ADD was not killed:", err)
		os.Exit(3)
	}
	os.Exit(m.Run())
}
