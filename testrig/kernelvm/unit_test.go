//go:build linux

package kernelvm

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/testrig/testutil"
)

func TestRunPattern(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		match      []string
	}{
		{name: "TestA", want: `^TestA$`},
		{name: "TestA/sub_case", want: `^TestA$/^sub_case$`},
		{name: "TestA/x.y+(z)#01", want: `^TestA$/^x\.y\+\(z\)#01$`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runPattern(tc.name)
			require.Equal(t, tc.want, got)
			// Each level matches its own element exactly, and nothing longer.
			parts := strings.Split(tc.name, "/")
			for i, p := range strings.Split(got, "/") {
				re := regexp.MustCompile(p)
				require.True(t, re.MatchString(parts[i]))
				require.False(t, re.MatchString(parts[i]+"x"))
			}
		})
	}
}

func TestVerdict(t *testing.T) {
	for _, tc := range []struct {
		line, name, want string
	}{
		{"--- PASS: TestA (0.01s)", "TestA", "PASS"},
		{"--- FAIL: TestA (1.20s)", "TestA", "FAIL"},
		{"--- SKIP: TestA (0.00s)", "TestA", "SKIP"},
		{"    --- PASS: TestA/sub (0.00s)", "TestA/sub", "PASS"},
		{"--- PASS: TestAB (0.01s)", "TestA", ""},
		{"--- PASS: TestA/sub (0.01s)", "TestA", ""},
		{"=== RUN   TestA", "TestA", ""},
		{"PASS", "TestA", ""},
	} {
		t.Run(tc.line, func(t *testing.T) {
			require.Equal(t, tc.want, verdict(tc.line, tc.name))
		})
	}
}

func TestParseModulesDepAndLoadOrder(t *testing.T) {
	const dep = `# comment
8021q: mrp garp
bridge: llc stp
garp: stp llc
llc:
mrp:
stp: llc
dummy:
macvlan:
macvtap: tap macvlan
tap:
cyc1: cyc2
cyc2: cyc1
`
	deps, err := parseModulesDep(bufio.NewScanner(strings.NewReader(dep)))
	require.NoError(t, err)
	for _, tc := range []struct {
		name    string
		mods    []string
		want    []string
		wantErr error
	}{
		{name: "leaf", mods: []string{"dummy"}, want: []string{"dummy"}},
		{name: "deps first", mods: []string{"macvtap"}, want: []string{"tap", "macvlan", "macvtap"}},
		{name: "shared deps once", mods: []string{"bridge", "8021q"}, want: []string{"llc", "stp", "bridge", "mrp", "garp", "8021q"}},
		{name: "missing", mods: []string{"nope"}, wantErr: ErrUnavailable},
		{name: "cycle", mods: []string{"cyc1"}, wantErr: errors.New("cycle")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := loadOrder(deps, "/assets", tc.mods)
			switch {
			case tc.wantErr == ErrUnavailable:
				require.ErrorIs(t, err, ErrUnavailable)
				var me *ModuleError
				require.ErrorAs(t, err, &me)
				require.Equal(t, tc.mods[0], me.Module)
			case tc.wantErr != nil:
				require.ErrorContains(t, err, tc.wantErr.Error())
			default:
				require.NoError(t, err)
				require.Equal(t, tc.want, got)
			}
		})
	}

	_, err = parseModulesDep(bufio.NewScanner(strings.NewReader("no colon here\n")))
	require.ErrorContains(t, err, "line 1")
}

func TestModulesFor(t *testing.T) {
	for _, tc := range []struct {
		name  string
		needs []string
		extra []string
		want  []string
	}{
		{name: "none", want: []string{}},
		{name: "dedup", needs: []string{"dummy", "macvtap", "dummy"}, extra: []string{"nft-masq", "dummy"}, want: []string{"dummy", "macvtap", "nft_masq"}},
		{name: "vlan", needs: []string{"vlan"}, want: []string{"8021q"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := modulesFor(tc.needs, tc.extra)
			require.NoError(t, err)
			require.Equal(t, tc.want, append([]string{}, got...))
		})
	}
	_, err := modulesFor([]string{"wireguard"}, nil)
	require.ErrorIs(t, err, ErrUnknownNeed)
	require.ErrorContains(t, err, `"wireguard"`)
	require.ErrorIs(t, Supported("wireguard"), ErrUnknownNeed)
}

// readCPIO is a minimal newc reader for checking what writeInitramfs wrote.
func readCPIO(t *testing.T, r io.Reader) map[string]struct {
	mode uint32
	data string
	rdev [2]uint32
} {
	t.Helper()
	type entry = struct {
		mode uint32
		data string
		rdev [2]uint32
	}
	out := map[string]entry{}
	br := bufio.NewReader(r)
	var off int64
	read := func(n int64) []byte {
		b := make([]byte, n)
		_, err := io.ReadFull(br, b)
		require.NoError(t, err)
		off += n
		return b
	}
	align := func() {
		if r := off % 4; r != 0 {
			read(4 - r)
		}
	}
	for {
		h := read(110)
		require.Equal(t, "070701", string(h[:6]))
		field := func(i int) uint32 {
			v, err := strconv.ParseUint(string(h[6+8*i:14+8*i]), 16, 32)
			require.NoError(t, err)
			return uint32(v)
		}
		mode, size, namesize := field(1), field(6), field(11)
		name := strings.TrimRight(string(read(int64(namesize))), "\x00")
		align()
		data := read(int64(size))
		align()
		if name == "TRAILER!!!" {
			return out
		}
		out[name] = entry{mode: mode, data: string(data), rdev: [2]uint32{field(9), field(10)}}
	}
}

func TestWriteInitramfs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
		return p
	}
	modDir := filepath.Join(dir, "modules")
	require.NoError(t, os.Mkdir(modDir, 0o755))
	write("modules/tap.ko", "TAP")
	write("modules/macvtap.ko", "MACVTAP!")
	spec := initramfsSpec{
		busybox: write("busybox", "BB"),
		modDir:  modDir,
		modules: []string{"tap", "macvtap"},
		testBin: write("x.test", "TESTBIN"),
		init:    "#!/bin/busybox sh\n",
	}
	out := filepath.Join(dir, "initramfs.cpio")
	size, err := writeInitramfs(out, spec)
	require.NoError(t, err)
	st, err := os.Stat(out)
	require.NoError(t, err)
	require.Equal(t, st.Size(), size)

	f, err := os.Open(out)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	got := readCPIO(t, f)
	for _, tc := range []struct {
		name string
		mode uint32
		data string
	}{
		{"bin/busybox", modeFile | 0o755, "BB"},
		{"bin/sh", modeLink | 0o777, "busybox"},
		{"lib/modules/tap.ko", modeFile | 0o644, "TAP"},
		{"lib/modules/macvtap.ko", modeFile | 0o644, "MACVTAP!"},
		{"virtnet.test", modeFile | 0o755, "TESTBIN"},
		{"init", modeFile | 0o755, spec.init},
		{"tmp", modeDir | 0o755, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, ok := got[tc.name]
			require.True(t, ok, "missing %s", tc.name)
			require.Equal(t, tc.mode, e.mode, "mode %o", e.mode)
			require.Equal(t, tc.data, e.data)
		})
	}
	require.Equal(t, [2]uint32{5, 1}, got["dev/console"].rdev)

	_, err = writeInitramfs(out, initramfsSpec{busybox: filepath.Join(dir, "absent")})
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestInitScriptQuoting(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		testutil.Skip(t, "no sh to check the quoting with")
	}
	for _, v := range []string{"plain", "it's", `a "b" $c`, "`x`", "new\nline", ""} {
		t.Run(v, func(t *testing.T) {
			out, err := exec.Command(sh, "-c", "printf %s "+shQuote(v)).Output()
			require.NoError(t, err)
			require.Equal(t, v, string(out))
		})
	}

	s := initScript("MARK", []string{"tap", "macvtap"}, [][2]string{{"VIRTNET_REQUIRE_KERNEL", "1"}}, []string{"-test.run", "^TestA$"}, false, "")
	require.Less(t, strings.Index(s, "insmod '/lib/modules/tap.ko'"), strings.Index(s, "insmod '/lib/modules/macvtap.ko'"))
	require.Contains(t, s, "export VIRTNET_REQUIRE_KERNEL='1'")
	require.Contains(t, s, EnvInVM+"=1")
	require.Contains(t, s, "/virtnet.test '-test.run' '^TestA$'")
	require.Contains(t, s, `echo 'MARK' exit "$rc"`)
}

func TestDynamicDeps(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	objs, err := dynamicDeps(self)
	require.NoError(t, err)
	interp, err := interpreter(self)
	require.NoError(t, err)
	if interp == "" {
		// CGO_ENABLED=0: static, nothing to bundle.
		require.Empty(t, objs)
	} else {
		// CGO_ENABLED=1 or -race: the loader at its own path, then libc.
		require.Equal(t, strings.TrimPrefix(interp, "/"), objs[0].guest)
		var names []string
		for _, o := range objs[1:] {
			require.True(t, strings.HasPrefix(o.guest, "lib/virtnet/"), o.guest)
			names = append(names, filepath.Base(o.guest))
		}
		require.Contains(t, names, "libc.so.6")
	}
	_, err = dynamicDeps(filepath.Join(t.TempDir(), "absent"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestAvailableNamesWhatIsMissing(t *testing.T) {
	t.Setenv(EnvDir, filepath.Join(t.TempDir(), "nothing-here"))
	t.Setenv(EnvQEMU, "qemu-system-x86_64")
	err := Available()
	require.ErrorIs(t, err, ErrUnavailable)
	var ue *UnavailableError
	require.ErrorAs(t, err, &ue)
	require.NotEmpty(t, ue.Missing)
	if os.Geteuid() == 0 {
		t.Setenv(EnvQEMU, "no-such-qemu-binary")
		err = Available()
		require.ErrorAs(t, err, &ue)
		require.Equal(t, "no-such-qemu-binary in PATH", ue.Missing)
	}
}

// TestInitScriptHostRoot: the host root is mounted read-only before the
// test runs, the cache share read-write over it, and the test binary runs
// chrooted from the root's tmpfs.
func TestInitScriptHostRoot(t *testing.T) {
	s := initScript("MARK", nil, nil, []string{"-test.run", "^TestA$"}, true, "/root/.cache/x")
	root := strings.Index(s, "mount -t 9p -o trans=virtio,version=9p2000.L,ro,")
	tmp := strings.Index(s, "mount -t tmpfs tmpfs /host/tmp")
	cache := strings.Index(s, "hostcache '/host/root/.cache/x'")
	run := strings.Index(s, "chroot /host ")
	require.True(t, root >= 0 && tmp > root && cache > tmp && run > cache, "order: root, tmp, cache, chroot:\n%s", s)
	require.Contains(t, s, EnvHostRoot+"=1")
	require.NotContains(t, s, "LD_LIBRARY_PATH", "the host root has its own libraries")
	require.Contains(t, s, "exec /tmp/virtnet.test \"$@\"' virtnet.test '-test.run' '^TestA$'")
	require.Equal(t, []string{
		"-fsdev", "local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap",
		"-device", "virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot",
		"-fsdev", "local,id=hostcache,path=/a,,b,security_model=none,multidevs=remap",
		"-device", "virtio-9p-pci,fsdev=hostcache,mount_tag=hostcache",
	}, hostRootArgs("/a,b"))
}

func TestSetEnvPairs(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  map[string]string
		want [][2]string
		err  string
	}{
		{name: "none", set: nil, want: nil},
		{name: "sorted, values as given", set: map[string]string{"B_DIR": "/x y", "A": "it's"},
			want: [][2]string{{"A", "it's"}, {"B_DIR", "/x y"}}},
		{name: "dash", set: map[string]string{"A-B": "1"}, err: `"A-B" is not a variable name`},
		{name: "leading digit", set: map[string]string{"1A": "1"}, err: `"1A"`},
		{name: "empty", set: map[string]string{"": "1"}, err: `"" is not`},
		{name: "assignment smuggled", set: map[string]string{"A=1 B": "2"}, err: `"A=1 B"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := setEnvPairs(tc.set)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}
