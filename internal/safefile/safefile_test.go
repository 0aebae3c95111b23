package safefile_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/virtnet/virtnet/internal/safefile"
	"github.com/virtnet/virtnet/testrig/testutil"
)

func TestCheckReadable(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "disk.img")
	require.NoError(t, os.WriteFile(reg, []byte("x"), 0o644))
	pipe := filepath.Join(dir, "pipe")
	require.NoError(t, unix.Mkfifo(pipe, 0o644))
	tests := []struct {
		name    string
		path    string
		blockOK bool
		mode    string // "" when accepted
	}{
		{"regular file", reg, false, ""},
		{"FIFO", pipe, true, "named pipe"},
		{"character device", "/dev/null", true, "character device"},
		{"directory", dir, true, "directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := safefile.CheckReadable(tc.path, tc.blockOK)
			if tc.mode == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, safefile.ErrNotRegular)
			require.EqualError(t, err, tc.path+": not a regular file ("+tc.mode+")")
		})
	}
	t.Run("block device", func(t *testing.T) {
		if os.Geteuid() != 0 {
			testutil.Skip(t, "root (mknod of a block device)")
		}
		blk := filepath.Join(dir, "blk")
		require.NoError(t, unix.Mknod(blk, unix.S_IFBLK|0o600, int(unix.Mkdev(7, 200))))
		err := safefile.CheckReadable(blk, false)
		require.ErrorIs(t, err, safefile.ErrNotRegular)
		require.ErrorContains(t, err, "(block device)")
		// Opening a block device node with no driver behind it fails with
		// ENXIO; that it got past the type check is what matters.
		err = safefile.CheckReadable(blk, true)
		require.NotErrorIs(t, err, safefile.ErrNotRegular)
	})
}

func TestReadIn(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "small"), []byte("hello"), 0o644))
	big := strings.Repeat("b", 3*safefile.Chunk+7)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big"), []byte(big), 0o644))
	require.NoError(t, os.Symlink("small", filepath.Join(dir, "link")))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(dir, "out")))
	tests := []struct {
		name    string
		file    string
		limit   int64
		want    string
		wantErr error
		text    string
	}{
		{"small", "small", 5, "hello", nil, ""},
		{"several chunks", "big", int64(len(big)), big, nil, ""},
		{"link inside", "link", 5, "hello", nil, ""},
		{"one byte over", "small", 4, "", safefile.ErrTooLarge, "5 bytes, limit 4"},
		{"link outside", "out", 1 << 20, "", nil, "escapes"},
		{"missing", "nope", 1, "", fs.ErrNotExist, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := safefile.ReadIn(context.Background(), dir, tc.file, tc.limit)
			if tc.want != "" {
				require.NoError(t, err)
				require.Equal(t, tc.want, string(b))
				return
			}
			require.Error(t, err)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
			}
			require.ErrorContains(t, err, tc.text)
		})
	}
}
