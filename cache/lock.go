package cache

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/virtnet/virtnet/internal/flock"
)

// ErrLocked is matched by the error of a lock that another run held for
// as long as the caller's context allowed (an error naming the
// lock and wrapping the context's error).
var ErrLocked = flock.ErrLocked

// Lock is an exclusive lock taken with [Store.LockVMI]: a lock file 0600
// in the root, so that only root (or the store's owner) can take it (the
// launcher, which reads the records, cannot hold phase1 off). It is
// released when the process dies.
type Lock struct {
	f    *os.File
	path string
}

// Unlock releases the lock.
func (l *Lock) Unlock() error { return l.f.Close() }

// Remove deletes the lock file, then releases the lock. A run waiting on
// the removed file sees it gone once it gets the lock and takes the lock
// again on a new file, so mutual exclusion holds across the removal.
func (l *Lock) Remove() error {
	err := os.Remove(l.path)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("cache: remove lock %s: %w", l.path, err)
	}
	return nil
}

// LockVMI takes the store's lock of one VMI (file <root>/.lock-<uid>),
// waiting until it is free or ctx is done. Every phase1 Run and Cleanup of
// the VMI holds it, so that two of them never interleave.
func (s *Store) LockVMI(ctx context.Context, uid string) (*Lock, error) {
	if err := CheckName("VMI UID", uid); err != nil {
		return nil, err
	}
	return s.lock(ctx, ".lock-"+uid, "VMI "+uid)
}

// LockAttachment takes the store's lock of one CNI attachment's records
// (file <root>/.lock-.attachment-<uid>, 0600; a VMI UID never starts with
// '.', so it names no VMI's lock), waiting until it is free or ctx is done.
// A CNI plugin holds it across a whole verb (ADD, DEL, CHECK) of the
// attachment, around phase1's own locks, which phase1 releases before the
// verb ends; its GC takes it without waiting and leaves the records of an
// attachment whose lock another run holds.
func (s *Store) LockAttachment(ctx context.Context, uid string) (*Lock, error) {
	if err := CheckName("VMI UID", uid); err != nil {
		return nil, err
	}
	return s.lock(ctx, ".lock-.attachment-"+uid, "attachment "+uid)
}

// LockNamespace takes the store's lock of one network namespace, named by
// the device and inode of its nsfs file (file <root>/.lock-netns-<dev>-<ino>,
// 0600), waiting until it is free or ctx is done; what names the namespace
// in errors. Every phase1 Run and Cleanup on a namespace holds it. Only
// root (or the store's owner) can open the file, so that no other user of
// the node or the pod can hold phase1 off, as anyone could by flocking
// the namespace file itself (mode 0444, or /proc/self/ns/net in the pod).
func (s *Store) LockNamespace(ctx context.Context, dev, ino uint64, what string) (*Lock, error) {
	return s.lock(ctx, fmt.Sprintf(".lock-netns-%d-%d", dev, ino), "network namespace "+what)
}

// lockRetries bounds how often a lock file removed under a waiting run is
// taken again.
const lockRetries = 100

func (s *Store) lock(ctx context.Context, name, what string) (*Lock, error) {
	if err := s.ensureDir(s.root); err != nil {
		return nil, err
	}
	path := filepath.Join(s.root, name)
	what = fmt.Sprintf("%s (lock %s)", what, path)
	for range lockRetries {
		if err := checkFile(path); err != nil && !os.IsNotExist(err) {
			return nil, err
		}
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|oNoFollow, 0o600)
		if err != nil {
			return nil, fmt.Errorf("cache: lock %s: %w", path, err)
		}
		if err := flock.Lock(ctx, f, what); err != nil {
			f.Close()
			return nil, err
		}
		// The holder may have removed the file (Lock.Remove) while we
		// waited: then ours is a lock on nothing, take the new file's.
		held, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("cache: lock %s: %w", path, err)
		}
		now, err := os.Lstat(path)
		if err == nil && os.SameFile(held, now) {
			return &Lock{f: f, path: path}, nil
		}
		f.Close()
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("cache: lock %s: %w", path, err)
		}
	}
	return nil, fmt.Errorf("cache: lock %s: removed and recreated %d times while waiting", path, lockRetries)
}

// RemoveStaleLocks removes the lock files in the root that no run holds
// (those a killed run left behind) and returns how many it removed. A
// run waiting on a removed file takes the lock again on a new one (see
// [Lock.Remove]), so it is safe while other runs hold or wait for locks.
func (s *Store) RemoveStaleLocks() (int, error) {
	ents, err := list(s.root)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range ents {
		if !e.Type().IsRegular() || len(e.Name()) < 6 || e.Name()[:6] != ".lock-" {
			continue
		}
		p := filepath.Join(s.root, e.Name())
		f, err := os.OpenFile(p, os.O_RDWR|oNoFollow, 0)
		if err != nil {
			continue
		}
		if busy, err := flock.TryLock(f); err == nil && !busy && samePath(f, p) {
			// Locked, and still the file at p: only a holder of this
			// file's lock unlinks it (Lock.Remove), so no run can have
			// replaced it with a file it holds since.
			if err := os.Remove(p); err == nil {
				n++
			}
		}
		f.Close()
	}
	return n, nil
}

// samePath reports whether p still names the file f has open. Between
// the open and the lock, the holder of that file may have removed it and
// a new run created and locked another file at p: that one must stay.
func samePath(f *os.File, p string) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	pi, err := os.Lstat(p)
	return err == nil && os.SameFile(fi, pi)
}
