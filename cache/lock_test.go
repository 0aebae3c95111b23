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

// TestLockAttachmentApartFromVMI: an attachment's lock is a file of its
// own (0600), so a CNI verb holding it can run phase1, which takes the
// VMI's lock of the same UID; it is exclusive, one try with a done
// context answers ErrLocked at once, and no VMI UID names the same file
// (a UID never starts with '.').
func TestLockAttachmentApartFromVMI(t *testing.T) {
	s, root := newStore(t)
	ctx := context.Background()
	att, err := s.LockAttachment(ctx, uid)
	require.NoError(t, err)
	fi, err := os.Stat(filepath.Join(root, ".lock-.attachment-"+uid))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	vmi, err := s.LockVMI(ctx, uid)
	require.NoError(t, err, "the VMI's lock is another file")
	done, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.LockAttachment(done, uid)
	require.ErrorIs(t, err, cache.ErrLocked)
	_, err = s.LockVMI(ctx, ".attachment-"+uid)
	require.Error(t, err, "no VMI UID names the attachment's lock")
	require.NoError(t, vmi.Remove())
	require.NoError(t, att.Remove())
	_, err = s.LockAttachment(ctx, "../x")
	require.Error(t, err)
}

// TestOpenVMI: OpenVMI holds the VMI's lock (LockVMI waits for it, and
// gets it after Close); it refuses a bad UID and an unsafe record
// directory before it keeps the lock; the Dir creates the directory on its
// first write only, and what it writes the Store's readers read.
func TestOpenVMI(t *testing.T) {
	s, root := newStore(t)
	ctx := context.Background()
	d, err := s.OpenVMI(ctx, uid)
	require.NoError(t, err)
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	_, err = s.LockVMI(short, uid)
	require.ErrorIs(t, err, cache.ErrLocked, "OpenVMI holds the VMI's lock")

	has, err := d.HasRecords()
	require.NoError(t, err)
	require.False(t, has)
	require.NoDirExists(t, filepath.Join(root, uid), "no write yet, no directory")
	_, err = d.PutProgress(&cache.Progress{Interface: "default", PodInterface: "eth0", Binding: "bridge", State: cache.Finished})
	require.NoError(t, err)
	require.NoError(t, d.Sync())
	require.NoError(t, d.Close())
	got, err := s.ReadProgress(uid, "default")
	require.NoError(t, err)
	require.Equal(t, cache.Finished, got.State)
	l, err := s.LockVMI(short, uid)
	require.NoError(t, err, "Close released the lock")
	require.NoError(t, l.Remove())

	_, err = s.OpenVMI(ctx, "../x")
	var ne *cache.NameError
	require.ErrorAs(t, err, &ne)

	other := "symlinked"
	require.NoError(t, os.Symlink(t.TempDir(), filepath.Join(root, other)))
	_, err = s.OpenVMI(ctx, other)
	var ue *cache.UnsafeError
	require.ErrorAs(t, err, &ue)
	l, err = s.LockVMI(short, other)
	require.NoError(t, err, "a refused OpenVMI keeps no lock")
	require.NoError(t, l.Remove())
}
