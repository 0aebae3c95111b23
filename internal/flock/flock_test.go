package flock_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/internal/flock"
)

func open(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

// TestTryLockAndWait: a second open file of a locked path is busy, a
// Lock on it gives up with ErrLocked when its context ends, and takes the
// lock once the holder closes its file.
func TestTryLockAndWait(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	holder, waiter := open(t, path), open(t, path)

	busy, err := flock.TryLock(holder)
	require.NoError(t, err)
	require.False(t, busy)
	busy, err = flock.TryLock(waiter)
	require.NoError(t, err)
	require.True(t, busy)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err = flock.Lock(ctx, waiter, "test lock")
	require.ErrorIs(t, err, flock.ErrLocked)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	require.NoError(t, holder.Close())
	require.NoError(t, flock.Lock(context.Background(), waiter, "test lock"))
}
