package cache

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRemoveStaleLocksKeepsReplacedFile: a stale lock file removed and
// created again by another run between RemoveStaleLocks' open and its
// lock is not the file it locked: it stays (samePath), so the new run's
// lock keeps excluding others.
func TestRemoveStaleLocksKeepsReplacedFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), ".lock-x")
	require.NoError(t, os.WriteFile(p, nil, 0o600))
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	require.True(t, samePath(f, p))
	require.NoError(t, os.Remove(p))
	require.False(t, samePath(f, p), "removed")
	require.NoError(t, os.WriteFile(p, nil, 0o600))
	require.False(t, samePath(f, p), "another file at the same path")
}
