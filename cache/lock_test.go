package cache_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/cache"
)

// TestLockVMI: the VMI lock is exclusive, a wait ends with the context
// (ErrLocked, naming the lock file), and a holder that removes the lock
// file hands the lock to a waiter, which then holds it on a new file that
// a third locker must wait for.
func TestLockVMI(t *testing.T) {
	s, root := newStore(t)
	ctx := context.Background()
	held, err := s.LockVMI(ctx, uid)
	require.NoError(t, err)
	path := filepath.Join(root, ".lock-"+uid)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "only root can take the lock")

	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	_, err = s.LockVMI(short, uid)
	require.ErrorIs(t, err, cache.ErrLocked)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Contains(t, err.Error(), path)

	got := make(chan *cache.Lock, 1)
	go func() {
		l, err := s.LockVMI(ctx, uid)
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	time.Sleep(20 * time.Millisecond) // let the waiter open the old file
	require.NoError(t, held.Remove())
	var second *cache.Lock
	select {
	case second = <-got:
	case <-time.After(time.Minute): // a watchdog, not a timing assertion
		t.Fatal("the waiter never got the lock")
	}
	require.FileExists(t, path, "the waiter holds a new lock file")
	short2, cancel2 := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel2()
	_, err = s.LockVMI(short2, uid)
	require.ErrorIs(t, err, cache.ErrLocked, "the new file's lock is exclusive too")
	require.NoError(t, second.Remove())
	require.NoFileExists(t, path)
	third, err := s.LockVMI(ctx, uid)
	require.NoError(t, err)
	require.NoError(t, third.Unlock())
}
