package cache

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Put* and SyncVMI let a writer of several records (phase1) pay one
// directory fsync per VMI instead of one per record:
//
//   - each record is still written atomically (temporary file, fsync of
//     the file, rename), so a reader sees it absent, old or new, never torn,
//     after a SIGKILL and after a machine crash;
//   - the renames become durable at [Store.SyncVMI]: a machine crash before
//     it may bring back the previous version (or none) of a record put
//     since the last sync. phase1 syncs before it returns, so what it
//     reports as done is on disk; a crash before that also takes the
//     network namespace the records describe.

// PutProgress atomically writes rec (its Version is set) without the
// directory fsync (see [Store.SyncVMI]); wrote is false when the file
// already held these bytes.
func (s *Store) PutProgress(uid string, rec *Progress) (wrote bool, err error) {
	p, err := s.ProgressPath(uid, rec.Interface)
	if err != nil {
		return false, err
	}
	rec.Version = Version
	return s.writeFile(p, rec)
}

// PutInterface atomically writes rec (its Version is set) without the
// directory fsync (see [Store.SyncVMI]); wrote is false when the file
// already held these bytes.
func (s *Store) PutInterface(uid string, rec *Interface) (wrote bool, err error) {
	p, err := s.InterfacePath(uid, rec.Interface)
	if err != nil {
		return false, err
	}
	rec.Version = Version
	return s.writeFile(p, rec)
}

// SyncVMI makes the records put for a VMI durable: an fsync of its
// directory (the renames) and of the root (the directory's creation).
func (s *Store) SyncVMI(uid string) error {
	dir, err := s.vmiDir(uid)
	if err != nil {
		return err
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	if err := syncDir(s.root); err != nil {
		return err
	}
	return s.step(WriteDirSynced, "", dir)
}

// RemoveTemps deletes the temporary files that writes of a VMI's records
// left when their process died (".tmp-*" in the VMI's directory) and
// returns how many it removed. Call it only while no write of the VMI can
// be under way (phase1 holds [Store.LockVMI]).
func (s *Store) RemoveTemps(uid string) (int, error) {
	if err := CheckName("VMI UID", uid); err != nil {
		return 0, err
	}
	dir := filepath.Join(s.root, uid)
	entries, err := list(s.root, dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".tmp-") || !e.Type().IsRegular() {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !os.IsNotExist(err) {
			return n, fmt.Errorf("cache: remove stale %s: %w", e.Name(), err)
		}
		n++
	}
	return n, nil
}
