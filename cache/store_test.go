package cache_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/testrig/testutil"
)

const uid = "5d307ca9-b3ef-428c-8861-06e72d69f223"

func newStore(t *testing.T) (*cache.Store, string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "cache")
	s, err := cache.New(root)
	require.NoError(t, err)
	require.Equal(t, root, s.Root())
	return s, root
}

func sampleProgress() *cache.Progress {
	return &cache.Progress{
		Interface:    "default",
		Network:      "default",
		PodInterface: "eth0",
		Binding:      "bridge",
		State:        cache.Started,
		PodIPs:       []netip.Addr{netip.MustParseAddr("10.244.1.7"), netip.MustParseAddr("fd00:10:244:1::7")},
		Discovered: &cache.Link{
			Name: "eth0", Type: "veth", MAC: cache.MustParseMAC("0a:58:0a:f4:01:07"), MTU: 1450,
			Addresses: []netip.Prefix{netip.MustParsePrefix("10.244.1.7/24"), netip.MustParsePrefix("fd00:10:244:1::7/64")},
			Routes: []cache.Route{
				{Dst: netip.MustParsePrefix("0.0.0.0/0"), Gateway: netip.MustParseAddr("10.244.1.1")},
				{Dst: netip.MustParsePrefix("10.244.0.0/16"), Gateway: netip.MustParseAddr("10.244.1.1"), Src: netip.MustParseAddr("10.244.1.7"), Metric: 100},
			},
		},
	}
}

func sampleInterface() *cache.Interface {
	return &cache.Interface{
		Interface: "default", PodInterface: "eth0", Binding: "bridge",
		Bridge: "k6t-eth0", Tap: "tap0", NIC: "eth0-nic",
		MAC: cache.MustParseMAC("0a:58:0a:f4:01:07"), MTU: 1450, Queues: 4,
		IPv4: netip.MustParsePrefix("10.244.1.7/24"), IPv6: netip.MustParsePrefix("fd00:10:244:1::7/64"),
		Gateway: netip.MustParseAddr("10.244.1.1"), GatewayIPv6: netip.MustParseAddr("fe80::1"),
		ServerIPv4: netip.MustParseAddr("169.254.75.10"), ServerIPv6: netip.MustParseAddr("fe80::2"),
		Routes: []cache.Route{{Dst: netip.MustParsePrefix("10.96.0.0/12"), Gateway: netip.MustParseAddr("10.244.1.1")}},
	}
}

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name  string
		write func(s *cache.Store) error
		read  func(s *cache.Store) (any, error)
		want  any
		file  string
	}{
		{
			name:  "pod interface",
			write: func(s *cache.Store) error { return s.WriteProgress(uid, sampleProgress()) },
			read: func(s *cache.Store) (any, error) {
				return s.ReadProgress(uid, "default")
			},
			want: func() any { r := sampleProgress(); r.Version = cache.Version; return r }(),
			file: "pod-interface-default.json",
		},
		{
			name:  "interface",
			write: func(s *cache.Store) error { return s.WriteInterface(uid, sampleInterface()) },
			read: func(s *cache.Store) (any, error) {
				return s.ReadInterface(uid, "default")
			},
			want: func() any { r := sampleInterface(); r.Version = cache.Version; return r }(),
			file: "interface-default.json",
		},
		{
			name: "minimal interface (macvtap)",
			write: func(s *cache.Store) error {
				return s.WriteInterface(uid, &cache.Interface{Interface: "default", PodInterface: "net1", Binding: "macvtap", Target: "net1", Ifindex: 7, IPAMDisabled: true})
			},
			read: func(s *cache.Store) (any, error) { return s.ReadInterface(uid, "default") },
			want: &cache.Interface{Version: cache.Version, Interface: "default", PodInterface: "net1", Binding: "macvtap", Target: "net1", Ifindex: 7, IPAMDisabled: true},
			file: "interface-default.json",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, root := newStore(t)
			require.NoError(t, tt.write(s))
			path := filepath.Join(root, uid, tt.file)
			first, err := os.ReadFile(path)
			require.NoError(t, err)
			require.True(t, bytes.HasSuffix(first, []byte("}\n")))
			require.Contains(t, string(first), `"version": 1`)

			got, err := tt.read(s)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)

			// Rewriting what was read gives the same bytes.
			switch r := got.(type) {
			case *cache.Progress:
				require.NoError(t, s.WriteProgress(uid, r))
			case *cache.Interface:
				require.NoError(t, s.WriteInterface(uid, r))
			}
			second, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, string(first), string(second))

			// And Decode of the bytes agrees with the store.
			var rec any
			switch got.(type) {
			case *cache.Progress:
				r := &cache.Progress{}
				require.NoError(t, cache.Decode(path, first, r))
				rec = r
			case *cache.Interface:
				r := &cache.Interface{}
				require.NoError(t, cache.Decode(path, first, r))
				rec = r
			}
			require.Equal(t, tt.want, rec)
		})
	}
}

func TestStates(t *testing.T) {
	s, _ := newStore(t)
	for _, st := range []cache.State{cache.Pending, cache.Started, cache.Finished} {
		rec := sampleProgress()
		rec.State = st
		require.NoError(t, s.WriteProgress(uid, rec))
		got, err := s.ReadProgress(uid, "default")
		require.NoError(t, err)
		require.Equal(t, st, got.State)
	}
	require.Equal(t, "pending", cache.Pending.String())
	require.Equal(t, "finished", cache.Finished.String())
	require.Equal(t, "State(7)", cache.State(7).String())

	rec := sampleProgress()
	rec.State = cache.State(7)
	require.Error(t, s.WriteProgress(uid, rec), "an invalid state is not written")
	got, err := s.ReadProgress(uid, "default")
	require.NoError(t, err)
	require.Equal(t, cache.Finished, got.State, "the last good record is kept")
}

// writeRaw puts a file where the store reads the interface record of
// "default", with the modes the store itself uses.
func writeRaw(t *testing.T, root, name string, data []byte) string {
	t.Helper()
	dir := filepath.Join(root, uid)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, data, 0o644))
	return p
}

func TestVersionMismatch(t *testing.T) {
	for _, v := range []int{0, 2, -1, 1 << 40} {
		s, root := newStore(t)
		p := writeRaw(t, root, "interface-default.json", []byte(`{"version": `+itoa(v)+`, "interface": "default", "futureField": 1}`))
		_, err := s.ReadInterface(uid, "default")
		var ve *cache.VersionError
		require.ErrorAs(t, err, &ve)
		require.Equal(t, p, ve.Path)
		require.Equal(t, v, ve.Got)
		require.Equal(t, cache.Version, ve.Want)
		require.Contains(t, err.Error(), p)

		p = writeRaw(t, root, "pod-interface-default.json", []byte(`{"version": `+itoa(v)+`}`))
		_, err = s.ReadProgress(uid, "default")
		require.ErrorAs(t, err, &ve)
		require.Equal(t, p, ve.Path)
	}
}

func itoa(v int) string {
	var b []byte
	if v < 0 {
		return "-" + itoa(-v)
	}
	if v == 0 {
		return "0"
	}
	for v > 0 {
		b = append([]byte{byte('0' + v%10)}, b...)
		v /= 10
	}
	return string(b)
}

func TestCorrupt(t *testing.T) {
	tests := []struct {
		name, data, want string
	}{
		{"empty file", "", "unexpected end"},
		{"not JSON", "{not json", "invalid character"},
		{"truncated", `{"version": 1, "interface": "def`, "unexpected end"},
		{"no version", `{"interface": "default"}`, "no version"},
		{"null", `null`, "no version"},
		{"array", `[1]`, "cannot unmarshal"},
		{"version is a string", `{"version": "1"}`, "cannot unmarshal"},
		{"wrong field type", `{"version": 1, "mtu": "1500"}`, "cannot unmarshal"},
		{"unknown field", `{"version": 1, "interface": "default", "sneaky": true}`, "sneaky"},
		{"trailing data", `{"version": 1}{"version": 1}`, "trailing"},
		{"too large", `{"version": 1, "interface": "` + strings.Repeat("a", cache.MaxRecordSize) + `"}`, "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, root := newStore(t)
			p := writeRaw(t, root, "interface-default.json", []byte(tt.data))
			_, err := s.ReadInterface(uid, "default")
			var ce *cache.CorruptError
			require.ErrorAs(t, err, &ce, "got %v", err)
			require.Equal(t, p, ce.Path)
			require.Contains(t, err.Error(), p)
			require.Contains(t, err.Error(), tt.want)
			require.False(t, errors.Is(err, cache.ErrNotExist))
		})
	}
}

func TestUnknownState(t *testing.T) {
	// null is refused too: the store never writes it.
	for _, state := range []string{`"exploded"`, `"Started"`, `1`, `null`, `""`} {
		t.Run(state, func(t *testing.T) {
			s, root := newStore(t)
			p := writeRaw(t, root, "pod-interface-default.json", []byte(`{"version": 1, "interface": "default", "state": `+state+`}`))
			_, err := s.ReadProgress(uid, "default")
			var ce *cache.CorruptError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, p, ce.Path)
		})
	}
}

func TestNotExist(t *testing.T) {
	s, root := newStore(t)
	check := func(t *testing.T) {
		t.Helper()
		_, err := s.ReadInterface(uid, "default")
		require.ErrorIs(t, err, cache.ErrNotExist)
		require.ErrorIs(t, err, fs.ErrNotExist)
		require.ErrorContains(t, err, filepath.Join(root, uid, "interface-default.json"))
		_, err = s.ReadProgress(uid, "default")
		require.ErrorIs(t, err, cache.ErrNotExist)
	}
	t.Run("no root", check)
	require.NoError(t, os.Mkdir(root, 0o755))
	t.Run("no VMI directory", check)
	require.NoError(t, s.WriteInterface(uid, &cache.Interface{Interface: "other"}))
	t.Run("no file", check)
}

func TestBadNames(t *testing.T) {
	bad := []string{"", ".", "..", "../x", "a/b", "/abs", "a\x00b", `a\b`, ".hidden", strings.Repeat("n", 254)}
	for _, name := range bad {
		t.Run(strings.ToValidUTF8(name, "?"), func(t *testing.T) {
			s, root := newStore(t)
			ops := map[string]func() error{
				"WriteProgress iface":  func() error { return s.WriteProgress(uid, &cache.Progress{Interface: name}) },
				"WriteProgress uid":    func() error { return s.WriteProgress(name, &cache.Progress{Interface: "a"}) },
				"WriteInterface iface": func() error { return s.WriteInterface(uid, &cache.Interface{Interface: name}) },
				"WriteInterface uid":   func() error { return s.WriteInterface(name, &cache.Interface{Interface: "a"}) },
				"ReadProgress":         func() error { _, err := s.ReadProgress(uid, name); return err },
				"ReadInterface uid":    func() error { _, err := s.ReadInterface(name, "a"); return err },
				"Delete iface":         func() error { return s.Delete(uid, name) },
				"Delete uid":           func() error { return s.Delete(name, "a") },
				"DeleteVMI":            func() error { return s.DeleteVMI(name) },
				"InterfacePath":        func() error { _, err := s.InterfacePath(uid, name); return err },
				"PodInterfacePath":     func() error { _, err := s.ProgressPath(name, "a"); return err },
			}
			for op, f := range ops {
				err := f()
				var ne *cache.NameError
				require.ErrorAs(t, err, &ne, op)
				require.Equal(t, name, ne.Value, op)
				require.NoDirExists(t, root, "%s touched the filesystem", op)
			}
			require.Error(t, cache.CheckName("interface", name))
		})
	}
	for _, good := range []string{"default", "net-1", "a_b", "A", "x.y", strings.Repeat("n", 253)} {
		require.NoError(t, cache.CheckName("interface", good), good)
	}
	for _, root := range []string{"", "relative/dir", "/a\x00b"} {
		_, err := cache.New(root)
		var ne *cache.NameError
		require.ErrorAs(t, err, &ne, "root %q", root)
	}
}

func TestModes(t *testing.T) {
	for _, umask := range []int{0o022, 0o077} {
		t.Run(itoa(umask), func(t *testing.T) {
			old := syscall.Umask(umask)
			t.Cleanup(func() { syscall.Umask(old) })
			s, root := newStore(t)
			require.NoError(t, s.WriteInterface(uid, sampleInterface()))
			require.NoError(t, s.WriteProgress(uid, sampleProgress()))
			for _, d := range []string{root, filepath.Join(root, uid)} {
				fi, err := os.Stat(d)
				require.NoError(t, err)
				require.Equal(t, cache.DirMode, fi.Mode().Perm(), d)
				require.Equal(t, fs.FileMode(0o755), fi.Mode().Perm())
			}
			for _, f := range []string{"interface-default.json", "pod-interface-default.json"} {
				fi, err := os.Stat(filepath.Join(root, uid, f))
				require.NoError(t, err)
				require.Equal(t, cache.FileMode, fi.Mode().Perm(), f)
				require.Equal(t, fs.FileMode(0o644), fi.Mode().Perm())
			}
		})
	}
}

func TestDeleteIdempotent(t *testing.T) {
	s, root := newStore(t)
	require.NoError(t, s.Delete(uid, "default"), "nothing written yet")
	require.NoError(t, s.DeleteVMI(uid), "nothing written yet")

	require.NoError(t, s.WriteInterface(uid, sampleInterface()))
	require.NoError(t, s.WriteProgress(uid, sampleProgress()))
	other := &cache.Interface{Interface: "net1"}
	require.NoError(t, s.WriteInterface(uid, other))
	require.NoError(t, s.WriteInterface("other-vmi", sampleInterface()))

	for range 2 {
		require.NoError(t, s.Delete(uid, "default"))
		_, err := s.ReadInterface(uid, "default")
		require.ErrorIs(t, err, cache.ErrNotExist)
		_, err = s.ReadProgress(uid, "default")
		require.ErrorIs(t, err, cache.ErrNotExist)
		_, err = s.ReadInterface(uid, "net1")
		require.NoError(t, err, "other interfaces are kept")
	}
	for range 2 {
		require.NoError(t, s.DeleteVMI(uid))
		require.NoDirExists(t, filepath.Join(root, uid))
		_, err := s.ReadInterface(uid, "net1")
		require.ErrorIs(t, err, cache.ErrNotExist)
		_, err = s.ReadInterface("other-vmi", "default")
		require.NoError(t, err, "other VMIs are kept")
	}
}

// TestHostile sets up what another user could have planted and checks
// that reads and writes refuse it with an UnsafeError naming the path.
func TestHostile(t *testing.T) {
	type env struct {
		s         *cache.Store
		root, dir string
		file      string // the interface record of "default"
		elsewhere string // a directory outside the store
	}
	tests := []struct {
		name     string
		root     bool // needs root (chown)
		setup    func(t *testing.T, e env)
		unsafe   string // the path the error must name
		write    bool   // a write is refused too
		delete   bool   // Delete is refused too
		okReason string
	}{
		{
			name: "root is a symlink",
			setup: func(t *testing.T, e env) {
				require.NoError(t, os.Symlink(e.elsewhere, e.root))
			},
			unsafe: "root", write: true, delete: true,
		},
		{
			name: "record directory is a symlink",
			setup: func(t *testing.T, e env) {
				require.NoError(t, os.Mkdir(e.root, 0o755))
				require.NoError(t, os.Symlink(e.elsewhere, e.dir))
			},
			unsafe: "dir", write: true, delete: true,
		},
		{
			name: "root is world-writable",
			setup: func(t *testing.T, e env) {
				require.NoError(t, os.Mkdir(e.root, 0o755))
				require.NoError(t, os.Chmod(e.root, 0o777))
			},
			unsafe: "root", write: true, delete: true,
		},
		{
			name: "record directory is world-writable",
			setup: func(t *testing.T, e env) {
				require.NoError(t, os.MkdirAll(e.dir, 0o755))
				require.NoError(t, os.Chmod(e.dir, 0o777))
			},
			unsafe: "dir", write: true, delete: true,
		},
		{
			name: "record directory is a file",
			setup: func(t *testing.T, e env) {
				require.NoError(t, os.Mkdir(e.root, 0o755))
				require.NoError(t, os.WriteFile(e.dir, nil, 0o644))
			},
			unsafe: "dir", write: true,
		},
		{
			name: "file is a symlink",
			setup: func(t *testing.T, e env) {
				require.NoError(t, os.MkdirAll(e.dir, 0o755))
				target := filepath.Join(e.elsewhere, "secret.json")
				require.NoError(t, os.WriteFile(target, []byte(`{"version": 1}`), 0o644))
				require.NoError(t, os.Symlink(target, e.file))
			},
			unsafe: "file", write: true,
		},
		{
			name: "file is world-writable",
			setup: func(t *testing.T, e env) {
				require.NoError(t, os.MkdirAll(e.dir, 0o755))
				require.NoError(t, os.WriteFile(e.file, []byte(`{"version": 1}`), 0o644))
				require.NoError(t, os.Chmod(e.file, 0o666))
			},
			unsafe: "file", write: true,
		},
		{
			name: "file is a FIFO",
			setup: func(t *testing.T, e env) {
				require.NoError(t, os.MkdirAll(e.dir, 0o755))
				require.NoError(t, syscall.Mkfifo(e.file, 0o644))
			},
			unsafe: "file", write: true,
		},
		{
			name: "file is a directory",
			setup: func(t *testing.T, e env) {
				require.NoError(t, os.MkdirAll(e.file, 0o755))
			},
			unsafe: "file", write: true,
		},
		{
			name: "file owned by another uid", root: true,
			setup: func(t *testing.T, e env) {
				require.NoError(t, os.MkdirAll(e.dir, 0o755))
				require.NoError(t, os.WriteFile(e.file, []byte(`{"version": 1}`), 0o644))
				require.NoError(t, os.Lchown(e.file, 4242, 4242))
			},
			unsafe: "file", write: true,
		},
		{
			name: "record directory owned by another uid", root: true,
			setup: func(t *testing.T, e env) {
				require.NoError(t, os.MkdirAll(e.dir, 0o755))
				require.NoError(t, os.Lchown(e.dir, 4242, 4242))
			},
			unsafe: "dir", write: true, delete: true,
		},
		{
			name: "root owned by another uid", root: true,
			setup: func(t *testing.T, e env) {
				require.NoError(t, os.Mkdir(e.root, 0o755))
				require.NoError(t, os.Lchown(e.root, 4242, 4242))
			},
			unsafe: "root", write: true, delete: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.root && os.Geteuid() != 0 {
				testutil.Skip(t, "needs root to chown a cache path to another uid")
			}
			base := t.TempDir()
			e := env{root: filepath.Join(base, "cache"), elsewhere: filepath.Join(base, "elsewhere")}
			e.dir = filepath.Join(e.root, uid)
			e.file = filepath.Join(e.dir, "interface-default.json")
			require.NoError(t, os.Mkdir(e.elsewhere, 0o755))
			s, err := cache.New(e.root)
			require.NoError(t, err)
			e.s = s
			tt.setup(t, e)
			want := map[string]string{"root": e.root, "dir": e.dir, "file": e.file}[tt.unsafe]

			_, err = s.ReadInterface(uid, "default")
			var ue *cache.UnsafeError
			require.ErrorAs(t, err, &ue, "read: %v", err)
			require.Equal(t, want, ue.Path)
			require.Contains(t, err.Error(), want)

			if tt.write {
				err = s.WriteInterface(uid, sampleInterface())
				require.ErrorAs(t, err, &ue, "write: %v", err)
				require.Equal(t, want, ue.Path)
			}
			if tt.delete {
				err = s.Delete(uid, "default")
				require.ErrorAs(t, err, &ue, "delete: %v", err)
				err = s.DeleteVMI(uid)
				require.ErrorAs(t, err, &ue, "delete VMI: %v", err)
			}
			entries, err := os.ReadDir(e.elsewhere)
			require.NoError(t, err)
			for _, de := range entries {
				require.Equal(t, "secret.json", de.Name(), "nothing was written through a link")
			}
		})
	}
}

// TestStickyRootRefused: a world-writable root is refused even with the
// sticky bit (as /tmp): other users could take the names of the VMI
// directories and lock files first.
func TestStickyRootRefused(t *testing.T) {
	s, root := newStore(t)
	require.NoError(t, os.Mkdir(root, 0o755))
	require.NoError(t, os.Chmod(root, 0o777|fs.ModeSticky))
	var ue *cache.UnsafeError
	require.ErrorAs(t, s.WriteInterface(uid, sampleInterface()), &ue)
	require.Equal(t, root, ue.Path)
	require.Contains(t, ue.Error(), "world-writable")
	_, err := s.ReadInterface(uid, "default")
	require.ErrorAs(t, err, &ue)
	_, err = s.LockVMI(context.Background(), uid)
	require.ErrorAs(t, err, &ue)
}
