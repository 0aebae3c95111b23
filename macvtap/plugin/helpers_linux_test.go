package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/virtnet/virtnet/testrig/testutil"
)

// tlogWriter sends slog output to t.Log.
type tlogWriter struct{ t *testing.T }

func (w tlogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// testLogger logs to t.Log and fails the test on a record that carries a
// key twice (the logger's With attributes included): one value per key.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(uniqueKeys{fail: t.Errorf, next: slog.NewTextHandler(tlogWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})})
}

// uniqueKeys is a slog.Handler that checks each record's keys are unique.
type uniqueKeys struct {
	fail func(format string, args ...any)
	with []string
	next slog.Handler
}

func (h uniqueKeys) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h uniqueKeys) Handle(ctx context.Context, r slog.Record) error {
	seen := map[string]bool{}
	for _, k := range h.with {
		seen[k] = true
	}
	r.Attrs(func(a slog.Attr) bool {
		if seen[a.Key] {
			h.fail("log record %q carries key %q twice", r.Message, a.Key)
		}
		seen[a.Key] = true
		return true
	})
	return h.next.Handle(ctx, r)
}

func (h uniqueKeys) WithAttrs(as []slog.Attr) slog.Handler {
	with := slices.Clone(h.with)
	for _, a := range as {
		if slices.Contains(with, a.Key) {
			h.fail("logger carries key %q twice", a.Key)
		}
		with = append(with, a.Key)
	}
	return uniqueKeys{fail: h.fail, with: with, next: h.next.WithAttrs(as)}
}

func (h uniqueKeys) WithGroup(name string) slog.Handler {
	return uniqueKeys{fail: h.fail, next: h.next.WithGroup(name)}
}

// TestUniqueKeysHandler: the checker itself finds a repeated key, in a
// record and against the logger's With attributes.
func TestUniqueKeysHandler(t *testing.T) {
	var got []string
	h := uniqueKeys{fail: func(f string, a ...any) { got = append(got, fmt.Sprintf(f, a...)) }, next: slog.NewTextHandler(io.Discard, nil)}
	log := slog.New(h).With("a", 1)
	log.Info("fine", "b", 2)
	require.Empty(t, got)
	log.Info("twice", "a", 2)
	log.With("a", 3)
	require.Equal(t, []string{`log record "twice" carries key "a" twice`, `logger carries key "a" twice`}, got)
}

// addDummy creates a dummy lower device (ip link add NAME mtu MTU type dummy; ip link set NAME up).
func addDummy(t *testing.T, ns *testutil.NS, name string, mtu int) netlink.Link {
	t.Helper()
	la := netlink.NewLinkAttrs()
	la.Name, la.MTU = name, mtu
	require.NoError(t, ns.Handle.LinkAdd(&netlink.Dummy{LinkAttrs: la}), "ip link add %s type dummy", name)
	l, err := ns.Handle.LinkByName(name)
	require.NoError(t, err)
	require.NoError(t, ns.Handle.LinkSetUp(l))
	return l
}

// addMacvtap does what the device plugin's Allocate does: ip link add NAME
// link LOWER type macvtap mode MODE; ip link set NAME up.
func addMacvtap(t *testing.T, ns *testutil.NS, name string, lower netlink.Link, mode string) {
	t.Helper()
	modes := map[string]netlink.MacvlanMode{"bridge": netlink.MACVLAN_MODE_BRIDGE, "vepa": netlink.MACVLAN_MODE_VEPA, "private": netlink.MACVLAN_MODE_PRIVATE}
	la := netlink.NewLinkAttrs()
	la.Name, la.ParentIndex, la.TxQLen = name, lower.Attrs().Index, 1000
	mv := &netlink.Macvtap{Macvlan: netlink.Macvlan{LinkAttrs: la, Mode: modes[mode]}}
	require.NoError(t, ns.Handle.LinkAdd(mv), "ip link add %s link %s type macvtap mode %s", name, lower.Attrs().Name, mode)
	l, err := ns.Handle.LinkByName(name)
	require.NoError(t, err)
	require.NoError(t, ns.Handle.LinkSetUp(l))
}

// withPrev returns args with the ADD result spliced in as prevResult.
func withPrev(t *testing.T, args *skel.CmdArgs, result []byte) *skel.CmdArgs {
	t.Helper()
	var conf map[string]any
	require.NoError(t, json.Unmarshal(args.StdinData, &conf))
	var prev map[string]any
	require.NoError(t, json.Unmarshal(result, &prev))
	conf["prevResult"] = prev
	data, err := json.Marshal(conf)
	require.NoError(t, err)
	out := *args
	out.StdinData = data
	return &out
}

func ownerOf(fi fs.FileInfo) string {
	st := fi.Sys().(*syscall.Stat_t)
	return fmt.Sprintf("%d:%d", st.Uid, st.Gid)
}

// deleteNamedNS removes a named namespace early (ip netns del NAME), as a
// runtime does when it tears a sandbox down; the test's cleanup then finds
// it gone.
func deleteNamedNS(name string) error { return netns.DeleteNamed(name) }
