package phase1

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
)

// runLocks are the locks a Run or Cleanup holds: the VMI's, with its
// record directory opened once for the whole run, then the namespace's
// (always in that order, so that two runs never wait on each other in a
// cycle).
type runLocks struct {
	recs *cache.Dir
	// ns is the namespace's lock in the store (nil with Options.Driver
	// and no path).
	ns *cache.Lock
	// nsID identifies the namespace ("<dev>:<ino>" of its nsfs file; ""
	// without a path).
	nsID string
}

// takeLocks checks the namespace path and takes the VMI's lock and, for a
// real namespace, the namespace's, waiting as [Options.LockWait] says.
func takeLocks(ctx context.Context, vmi *api.VMI, netnsPath string, store *cache.Store, opts Options) (*runLocks, error) {
	l := &runLocks{}
	var dev, ino uint64
	if netnsPath != "" {
		var err error
		if dev, ino, err = namespaceID(netnsPath); err != nil {
			return nil, &Error{Step: StepOpen, Err: err}
		}
	}
	lctx, cancel := ctx, context.CancelFunc(func() {})
	switch {
	case opts.LockWait > 0:
		lctx, cancel = context.WithTimeout(ctx, opts.LockWait)
	case opts.LockWait < 0:
		lctx, cancel = context.WithCancel(ctx)
		cancel()
	}
	defer cancel()
	var err error
	if l.recs, err = store.OpenVMI(lctx, vmi.Metadata.UID); err != nil {
		return nil, &Error{Step: StepLock, Err: unwritableCache(store, err)}
	}
	if netnsPath != "" {
		l.nsID = fmt.Sprintf("%d:%d", dev, ino)
		if l.ns, err = store.LockNamespace(lctx, dev, ino, netnsPath); err != nil {
			_ = l.release()
			return nil, &Error{Step: StepLock, Err: err}
		}
	}
	return l, nil
}

// release unlocks, removing the lock files (a run that waits on one
// takes the lock again on a new file), so that no lock file outlives a
// run that was not killed.
func (l *runLocks) release() error {
	var errs []error
	if l.ns != nil {
		errs = append(errs, l.ns.Remove())
	}
	if l.recs != nil {
		errs = append(errs, l.recs.Close())
	}
	return errors.Join(errs...)
}

// unlock releases the locks ([runLocks.release]) and reports a failure
// to do so into *err when it is nil.
func (l *runLocks) unlock(err *error) {
	if uerr := l.release(); uerr != nil && *err == nil {
		*err = &Error{Step: StepLock, Err: uerr}
	}
}

// checkNamespace refuses a namespace other than the one the VMI's
// records describe (see [cache.Dir.CheckNamespace]).
func (l *runLocks) checkNamespace() error {
	if l.nsID == "" {
		return nil
	}
	if err := l.recs.CheckNamespace(l.nsID); err != nil {
		return &Error{Step: StepNamespace, Err: err}
	}
	return nil
}

// unwritableCache names the cause of a cache phase1 may not write: the
// first write of a run is its lock file, and the cache belongs to root
// because phase1 runs as root, in the privileged agent.
func unwritableCache(store *cache.Store, err error) error {
	if !errors.Is(err, fs.ErrPermission) {
		return err
	}
	return fmt.Errorf("the cache %s is not writable by this process (uid %d): phase1 runs as root, in the privileged agent "+
		"(CAP_NET_ADMIN, CAP_SYS_ADMIN), and so writes the cache a launcher only reads: %w", store.Root(), os.Geteuid(), err)
}
