package prestart_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/domxml"
	"github.com/virtnet/virtnet/phase2/prestart"
)

// TestDiskModes: once the sources exist, each disk gets cache none where
// O_DIRECT works and writethrough where it does not (KubeVirt's rule), a
// VMI's explicit cache none without O_DIRECT fails the run and restores
// the domain, and a preallocated raw file with cache none gets io native.
func TestDiskModes(t *testing.T) {
	for _, tc := range []struct {
		name      string
		direct    bool
		vmiCache  string
		wantCache string
		wantErr   error
	}{
		{name: "O_DIRECT", direct: true, wantCache: "none"},
		{name: "no O_DIRECT", direct: false, wantCache: "writethrough"},
		{name: "writethrough asked", direct: true, vmiCache: "writethrough", wantCache: "writethrough"},
		{name: "none asked without O_DIRECT", direct: false, vmiCache: "none", wantErr: domxml.ErrNoDirectIO},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, vmiYAML)
			if tc.vmiCache != "" {
				for i := range e.hook.Domain.Devices.Disks {
					e.hook.Domain.Devices.Disks[i].Driver.Cache = tc.vmiCache
				}
			}
			before, err := e.hook.Domain.Marshal()
			require.NoError(t, err)
			var checked []string
			e.hook.DirectIO = func(p string) (bool, error) {
				checked = append(checked, p)
				return tc.direct, nil
			}
			r, err := e.hook.Run(context.Background())
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				var se *prestart.StepError
				require.ErrorAs(t, err, &se)
				require.Equal(t, "disk-modes", se.Step)
				after, err := e.hook.Domain.Marshal()
				require.NoError(t, err)
				require.Equal(t, before, after, "domain not restored")
				return
			}
			require.NoError(t, err)
			require.NoError(t, r.Stop())
			for _, d := range e.hook.Domain.Devices.Disks {
				require.Equal(t, tc.wantCache, d.Driver.Cache, d.Alias.Name)
				if d.Alias.Name != "ua-data" { // the PVC's 3-byte file is fully allocated
					require.Empty(t, d.Driver.IO, "%s: sparse files get QEMU's default io", d.Alias.Name)
				}
				require.Contains(t, checked, d.Source.File.File)
			}
		})
	}
}

// TestDiskModesPreallocated: a fully allocated raw PVC image with cache
// none gets io native; the real O_DIRECT probe agrees with an O_DIRECT
// open on this file system.
func TestDiskModesPreallocated(t *testing.T) {
	e := newEnv(t, vmiYAML)
	pvc := filepath.Join(e.hook.Dirs.PrivateDir, "vmi-disks", "data", "disk.img")
	require.NoError(t, os.WriteFile(pvc, make([]byte, 1<<20), 0o644))
	r, err := e.hook.Run(context.Background())
	require.NoError(t, err)
	require.NoError(t, r.Stop())
	direct, err := prestart.DirectIOSupported(pvc)
	require.NoError(t, err)
	f, openErr := os.OpenFile(pvc, os.O_RDONLY|0o40000 /* O_DIRECT */, 0)
	if openErr == nil {
		f.Close()
	}
	require.Equal(t, openErr == nil, direct)
	data := diskByAlias(t, e.hook.Domain, "data")
	if direct {
		require.Equal(t, "none", data.Driver.Cache)
		require.Equal(t, "native", data.Driver.IO)
	} else {
		require.Equal(t, "writethrough", data.Driver.Cache)
		require.Empty(t, data.Driver.IO)
	}
	scratch := diskByAlias(t, e.hook.Domain, "scratch")
	require.Empty(t, scratch.Driver.IO, "a sparse emptyDisk is not preallocated")

	// A path that does not exist yet is probed in its directory, and the
	// probe file is gone afterwards.
	missing := filepath.Join(t.TempDir(), "later.iso")
	_, err = prestart.DirectIOSupported(missing)
	require.NoError(t, err)
	entries, err := os.ReadDir(filepath.Dir(missing))
	require.NoError(t, err)
	require.Empty(t, entries)
	_, err = prestart.DirectIOSupported(filepath.Join(t.TempDir(), "no", "dir", "x"))
	require.True(t, errors.Is(err, os.ErrNotExist), "%v", err)
}
