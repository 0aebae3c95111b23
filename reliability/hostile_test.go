//go:build linux

package reliability_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/virtnet/virtnet/netdriver/netdrivertest"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/netdriver/intercept"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// fakePod is a simulated pod behind a counting wrapper.
func fakePod() (*netdrivertest.Fake, *intercept.Driver) {
	f := netdrivertest.SimulatedPod(netdrivertest.SimLink{Name: "eth0"})
	return f, &intercept.Driver{Inner: f}
}

// TestHostileNamesNoKernelCall: interface and network names that could
// reach a path or a link name ('/', "..", spaces, over-long, NUL) and a
// hostile VMI UID are refused by api.Validate with the field's path (the
// one validation, which Load runs), and phase1 refuses a VMI no
// validation passed, before any kernel call, read-only ones included, and
// before it writes to the cache. A name that would make a path (pathName),
// set after Load validated the VMI, is still refused by the store before
// any kernel call.
func TestHostileNamesNoKernelCall(t *testing.T) {
	tests := []struct {
		name     string
		mutate   func(*api.VMI)
		pathName bool
	}{
		{"interface with slash", func(v *api.VMI) { renameDefault(v, "a/b") }, true},
		{"interface dot-dot", func(v *api.VMI) { renameDefault(v, "..") }, true},
		{"interface with space", func(v *api.VMI) { renameDefault(v, "de fault") }, false},
		{"interface with NUL", func(v *api.VMI) { renameDefault(v, "eth\x000") }, true},
		{"interface over api.MaxInterfaceName bytes", func(v *api.VMI) { renameDefault(v, strings.Repeat("a", api.MaxInterfaceName+1)) }, false},
		{"interface of 4096 bytes", func(v *api.VMI) { renameDefault(v, strings.Repeat("a", 4096)) }, true},
		{"interface ../../etc", func(v *api.VMI) { renameDefault(v, "../../etc") }, true},
		{"uid with slash", func(v *api.VMI) { v.Metadata.UID = "a/b" }, true},
		{"uid dot-dot", func(v *api.VMI) { v.Metadata.UID = ".." }, true},
		{"uid hidden", func(v *api.VMI) { v.Metadata.UID = ".x" }, true},
		{"uid empty", func(v *api.VMI) { v.Metadata.UID = "" }, true},
	}
	for _, tt := range tests {
		for _, yaml := range []string{bridgeVMI, masqueradeVMI} {
			t.Run(tt.name, func(t *testing.T) {
				vmi, err := api.Decode([]byte(yaml))
				require.NoError(t, err)
				api.SetDefaults(vmi)
				tt.mutate(vmi)
				if vmi.Metadata.UID != "" {
					require.ErrorIs(t, api.Validate(vmi), api.ErrInvalid)
					require.NotEmpty(t, api.FieldErrors(api.Validate(vmi)))
				}
				f, d := fakePod()
				s := testutil.NewStore(t)
				err = phase1.Run(context.Background(), vmi, "", s, phase1.Options{Driver: d})
				var pe *phase1.Error
				require.ErrorAs(t, err, &pe)
				require.Equal(t, phase1.StepValidate, pe.Step, "%v", err)
				require.True(t, pe.Permanent())
				reads, writes := d.Counts()
				require.Zero(t, reads+writes, "kernel calls before validation: %d reads, %d writes", reads, writes)
				require.Empty(t, f.Calls())
				_, err = os.Stat(s.Root())
				require.ErrorIs(t, err, os.ErrNotExist, "nothing written to the cache")
				require.Error(t, phase1.Cleanup(context.Background(), vmi, "", s, phase1.Options{Driver: d}))
				reads, writes = d.Counts()
				require.Zero(t, reads+writes, "Cleanup made kernel calls")

				if !tt.pathName {
					return
				}
				vmi = testutil.LoadVMI(t, yaml)
				tt.mutate(vmi)
				err = phase1.Run(context.Background(), vmi, "", s, phase1.Options{Driver: d})
				require.ErrorAs(t, err, &pe)
				require.True(t, pe.Permanent(), "%v", err)
				reads, writes = d.Counts()
				require.Zero(t, reads+writes, "kernel calls for a name the store refuses: %d reads, %d writes", reads, writes)
				require.Empty(t, f.Calls())
			})
		}
	}
}

// renameDefault renames the interface and network "default" together, so
// that only the name itself is wrong.
func renameDefault(v *api.VMI, name string) {
	v.Spec.Domain.Devices.Interfaces[0].Name = name
	v.Spec.Networks[0].Name = name
}

// TestHostileCacheThroughRun: a cache root or record directory that is a
// symlink, world-writable or owned by someone else, and a record that is
// a symlink, make phase1.Run fail with a *cache.UnsafeError naming the
// path, before it touches the kernel.
func TestHostileCacheThroughRun(t *testing.T) {
	type env struct{ root, dir, file, elsewhere string }
	tests := []struct {
		name     string
		needRoot bool
		setup    func(t *testing.T, e env)
		path     func(e env) string
	}{
		{name: "root is a symlink", setup: func(t *testing.T, e env) {
			require.NoError(t, os.Symlink(e.elsewhere, e.root))
		}, path: func(e env) string { return e.root }},
		{name: "root is world-writable", setup: func(t *testing.T, e env) {
			require.NoError(t, os.Mkdir(e.root, 0o755))
			require.NoError(t, os.Chmod(e.root, 0o777))
		}, path: func(e env) string { return e.root }},
		{name: "record directory is a symlink", setup: func(t *testing.T, e env) {
			require.NoError(t, os.Mkdir(e.root, 0o755))
			require.NoError(t, os.Symlink(e.elsewhere, e.dir))
		}, path: func(e env) string { return e.dir }},
		{name: "record directory is world-writable", setup: func(t *testing.T, e env) {
			require.NoError(t, os.MkdirAll(e.dir, 0o755))
			require.NoError(t, os.Chmod(e.dir, 0o757))
		}, path: func(e env) string { return e.dir }},
		{name: "record is a symlink", setup: func(t *testing.T, e env) {
			require.NoError(t, os.MkdirAll(e.dir, 0o755))
			target := filepath.Join(e.elsewhere, "record.json")
			require.NoError(t, os.WriteFile(target, []byte(`{"version":1}`), 0o644))
			require.NoError(t, os.Symlink(target, e.file))
		}, path: func(e env) string { return e.file }},
		{name: "record is world-writable", setup: func(t *testing.T, e env) {
			require.NoError(t, os.MkdirAll(e.dir, 0o755))
			require.NoError(t, os.WriteFile(e.file, []byte(`{"version":1}`), 0o644))
			require.NoError(t, os.Chmod(e.file, 0o666))
		}, path: func(e env) string { return e.file }},
		{name: "record directory owned by another user", needRoot: true, setup: func(t *testing.T, e env) {
			require.NoError(t, os.MkdirAll(e.dir, 0o755))
			require.NoError(t, os.Chown(e.dir, 4242, 4242))
		}, path: func(e env) string { return e.dir }},
		{name: "record owned by another user", needRoot: true, setup: func(t *testing.T, e env) {
			require.NoError(t, os.MkdirAll(e.dir, 0o755))
			require.NoError(t, os.WriteFile(e.file, []byte(`{"version":1}`), 0o644))
			require.NoError(t, os.Chown(e.file, 4242, 4242))
		}, path: func(e env) string { return e.file }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.needRoot && os.Geteuid() != 0 {
				testutil.Skip(t, "needs root to chown a cache path to another user")
			}
			base := t.TempDir()
			s, err := cache.New(filepath.Join(base, "cache"))
			require.NoError(t, err)
			file, err := s.ProgressPath(uid, "default")
			require.NoError(t, err)
			e := env{root: s.Root(), dir: filepath.Dir(file), file: file, elsewhere: filepath.Join(base, "elsewhere")}
			require.NoError(t, os.Mkdir(e.elsewhere, 0o755))
			tt.setup(t, e)
			f, d := fakePod()
			err = phase1.Run(context.Background(), testutil.LoadVMI(t, bridgeVMI), "", s, phase1.Options{Driver: d})
			var ue *cache.UnsafeError
			require.ErrorAs(t, err, &ue, "%v", err)
			require.Equal(t, tt.path(e), ue.Path)
			var pe *phase1.Error
			require.ErrorAs(t, err, &pe)
			// An unsafe root is found when the VMI's lock is taken, the
			// rest when the records are read: before any kernel call.
			require.Contains(t, []string{phase1.StepLock, phase1.StepRead}, pe.Step)
			reads, writes := d.Counts()
			require.Zero(t, reads+writes, "kernel calls despite an unsafe cache")
			require.Empty(t, f.Calls())
			ents, err := os.ReadDir(e.elsewhere)
			require.NoError(t, err)
			require.LessOrEqual(t, len(ents), 1, "nothing written through the link")
		})
	}
}
