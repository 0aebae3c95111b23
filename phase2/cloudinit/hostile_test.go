package cloudinit

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/virtnet/virtnet/api"
)

// hangGuard runs f and fails the test if it has not returned after a
// minute: a read that blocks (a FIFO without writer) would otherwise hang
// the test binary until its own timeout. It bounds the test, it does not
// time the code.
func hangGuard[T any](t *testing.T, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(time.Minute):
		t.Fatal("still blocked after a minute")
	}
	panic("unreachable")
}

// kubeletKey lays out key the way the kubelet mounts a secret: the data in
// a timestamped directory, "..data" linking to it and the key linking into
// "..data". make creates the file at the given path.
func kubeletKey(t *testing.T, dir, key string, make func(path string)) {
	t.Helper()
	ts := filepath.Join(dir, "..2026_12_03_07_00_00.000000001")
	require.NoError(t, os.MkdirAll(ts, 0o755))
	make(filepath.Join(ts, key))
	if _, err := os.Lstat(filepath.Join(dir, "..data")); err != nil {
		require.NoError(t, os.Symlink(filepath.Base(ts), filepath.Join(dir, "..data")))
	}
	require.NoError(t, os.Symlink(filepath.Join("..data", key), filepath.Join(dir, key)))
}

func fifo(t *testing.T) func(string) {
	return func(p string) { require.NoError(t, unix.Mkfifo(p, 0o644)) }
}

func regular(t *testing.T, data string) func(string) {
	return func(p string) { require.NoError(t, os.WriteFile(p, []byte(data), 0o644)) }
}

func socket(t *testing.T) func(string) {
	return func(p string) {
		l, err := net.Listen("unix", p)
		require.NoError(t, err)
		t.Cleanup(func() { _ = l.Close() })
	}
}

// TestHostileSecretFiles: what a pod's mount may hold in place of a
// cloud-init secret key. A FIFO, a socket or a link out of the directory
// is refused at once with ErrBadSource naming the field and the file
// (ErrNotRegular for the first two, which are the mount's fault, not the
// VMI's); the kubelet's own link layout reads; a cancelled context ends
// the read.
func TestHostileSecretFiles(t *testing.T) {
	const field = "spec.volumes[0].cloudInitNoCloud"
	src := &api.CloudInitSource{UserDataSecretRef: &api.LocalObjectReference{Name: "s"}}
	outside := filepath.Join(t.TempDir(), "outside")
	require.NoError(t, os.WriteFile(outside, []byte("secret of another"), 0o644))
	tests := []struct {
		name    string
		setup   func(t *testing.T, dir string)
		ctx     func() context.Context
		want    string // user data read; "" when an error is expected
		wantErr error
		errText string
	}{
		{name: "kubelet layout", setup: func(t *testing.T, dir string) { kubeletKey(t, dir, "userdata", regular(t, "#cloud-config\n")) },
			want: "#cloud-config\n"},
		{name: "FIFO", setup: func(t *testing.T, dir string) { fifo(t)(filepath.Join(dir, "userdata")) },
			wantErr: ErrNotRegular, errText: "userdata: not a regular file (named pipe)"},
		{name: "FIFO behind the kubelet's links", setup: func(t *testing.T, dir string) { kubeletKey(t, dir, "userData", fifo(t)) },
			wantErr: ErrNotRegular, errText: "named pipe"},
		{name: "socket", setup: func(t *testing.T, dir string) { socket(t)(filepath.Join(dir, "userdata")) },
			wantErr: ErrNotRegular, errText: "socket"},
		{name: "directory", setup: func(t *testing.T, dir string) { require.NoError(t, os.Mkdir(filepath.Join(dir, "userdata"), 0o755)) },
			wantErr: ErrNotRegular, errText: "directory"},
		{name: "absolute link out of the mount", setup: func(t *testing.T, dir string) {
			require.NoError(t, os.Symlink(outside, filepath.Join(dir, "userdata")))
		}, errText: "escapes"},
		{name: "relative link out of the mount", setup: func(t *testing.T, dir string) {
			require.NoError(t, os.Symlink(filepath.Join("..", "..", filepath.Base(filepath.Dir(outside)), "outside"), filepath.Join(dir, "userdata")))
		}, errText: "escapes"},
		{name: "link to /dev/zero", setup: func(t *testing.T, dir string) {
			require.NoError(t, os.Symlink("/dev/zero", filepath.Join(dir, "userdata")))
		}, errText: "escapes"},
		{name: "cancelled context", setup: func(t *testing.T, dir string) { regular(t, "u")(filepath.Join(dir, "userdata")) },
			ctx: func() context.Context {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx
			}, wantErr: context.Canceled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "vol")
			require.NoError(t, os.Mkdir(dir, 0o755))
			tc.setup(t, dir)
			ctx := context.Background()
			if tc.ctx != nil {
				ctx = tc.ctx()
			}
			type result struct {
				d   Data
				err error
			}
			r := hangGuard(t, func() result {
				d, err := DecodeSource(ctx, src, field, dir)
				return result{d, err}
			})
			if tc.want != "" {
				require.NoError(t, r.err)
				require.Equal(t, tc.want, string(r.d.UserData))
				return
			}
			require.Error(t, r.err)
			if tc.wantErr != nil {
				require.ErrorIs(t, r.err, tc.wantErr)
			}
			require.ErrorIs(t, r.err, ErrBadSource)
			require.ErrorContains(t, r.err, "bad source "+field+".secretRef: ")
			require.Contains(t, r.err.Error(), tc.errText)
			if errors.Is(r.err, ErrNotRegular) {
				require.NotErrorIs(t, r.err, api.ErrInvalid, "a FIFO in the mount is not the VMI's fault")
				require.ErrorContains(t, r.err, field+".secretRef: "+filepath.Join(dir, "user"))
			}
		})
	}
}

// TestHostileSysprepFiles: the same for a sysprep directory, whose every
// top-level entry goes into the image.
func TestHostileSysprepFiles(t *testing.T) {
	const field = "spec.volumes[1].sysprep"
	tests := []struct {
		name    string
		setup   func(t *testing.T, dir string)
		cancel  bool
		wantErr error
		errText string
	}{
		{name: "kubelet layout with a subdirectory", setup: func(t *testing.T, dir string) {
			kubeletKey(t, dir, "autounattend.xml", regular(t, "<unattend/>"))
			require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
		}},
		{name: "FIFO as the unattend file", setup: func(t *testing.T, dir string) { fifo(t)(filepath.Join(dir, "autounattend.xml")) },
			wantErr: ErrNotRegular, errText: "autounattend.xml: not a regular file (named pipe)"},
		{name: "FIFO next to the unattend file", setup: func(t *testing.T, dir string) {
			regular(t, "<unattend/>")(filepath.Join(dir, "unattend.xml"))
			kubeletKey(t, dir, "extra.ps1", fifo(t))
		}, wantErr: ErrNotRegular, errText: "extra.ps1"},
		{name: "socket", setup: func(t *testing.T, dir string) {
			regular(t, "<unattend/>")(filepath.Join(dir, "unattend.xml"))
			socket(t)(filepath.Join(dir, "s"))
		}, wantErr: ErrNotRegular, errText: "socket"},
		{name: "link to /dev/zero", setup: func(t *testing.T, dir string) {
			regular(t, "<unattend/>")(filepath.Join(dir, "unattend.xml"))
			require.NoError(t, os.Symlink("/dev/zero", filepath.Join(dir, "zero")))
		}, errText: "escapes"},
		{name: "over the size limit", setup: func(t *testing.T, dir string) {
			regular(t, "<unattend/>")(filepath.Join(dir, "unattend.xml"))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "big"), make([]byte, MaxSysprepData), 0o644))
		}, wantErr: ErrTooLarge, errText: "sysprep files over 1048576 bytes in total"},
		{name: "cancelled context", cancel: true, setup: func(t *testing.T, dir string) {
			regular(t, "<unattend/>")(filepath.Join(dir, "unattend.xml"))
		}, wantErr: context.Canceled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "sysprep")
			require.NoError(t, os.Mkdir(dir, 0o755))
			tc.setup(t, dir)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				cancel()
			}
			iso := filepath.Join(t.TempDir(), "sysprep.iso")
			err := hangGuard(t, func() error { return Sysprep(ctx, iso, dir, field) })
			if tc.wantErr == nil && tc.errText == "" {
				require.NoError(t, err)
				_, err := os.Stat(iso)
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
			}
			require.Contains(t, err.Error(), tc.errText)
			if !tc.cancel {
				require.ErrorIs(t, err, ErrBadSource)
				require.ErrorContains(t, err, "bad source "+field+": ")
			}
			_, serr := os.Stat(iso)
			require.ErrorIs(t, serr, os.ErrNotExist, "no image on failure")
		})
	}
}
