package safefile_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/internal/safefile"
)

// TestReplace: the target holds the new bytes after a Replace and the old
// ones after a Replace that failed at any stage, and no temporary file is
// left either way.
func TestReplace(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		failAt  safefile.Stage // -1: never
		failW   bool
		want    string
		wantErr error
	}{
		{"ok", -1, false, "new", nil},
		{"write fails", -1, true, "old", boom},
		{"created", safefile.Created, false, "old", boom},
		{"written", safefile.Written, false, "old", boom},
		{"synced", safefile.Synced, false, "old", boom},
		{"renamed", safefile.Renamed, false, "new", boom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			target := filepath.Join(dir, "f")
			require.NoError(t, os.WriteFile(target, []byte("old"), 0o644))
			tmp, err := os.CreateTemp(dir, ".tmp-*")
			require.NoError(t, err)
			var stages []safefile.Stage
			err = safefile.Replace(tmp, target, func(f *os.File) error {
				if tc.failW {
					return boom
				}
				_, err := f.WriteString("new")
				return err
			}, func(st safefile.Stage) error {
				stages = append(stages, st)
				if st == tc.failAt {
					return boom
				}
				return nil
			})
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
			} else {
				require.NoError(t, err)
				require.Equal(t, []safefile.Stage{safefile.Created, safefile.Written, safefile.Synced, safefile.Renamed}, stages)
			}
			got, err := os.ReadFile(target)
			require.NoError(t, err)
			require.Equal(t, tc.want, string(got))
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Len(t, entries, 1, "only the target is left")
		})
	}
}
