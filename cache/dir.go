package cache

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Dir is the record directory of one VMI (<root>/<uid>), opened once: its
// UID checked, the root and the directory checked where they exist (the
// first write creates and checks it), each record's name checked when its
// path is first made. A writer gets one from [Store.OpenVMI], with the
// VMI's lock, and does its whole run on it: while the lock is held no
// other writer of the VMI runs, and the root is root's (or ours) and not
// world-writable, so nobody else can replace the directory. Each record
// file is still checked when it is read. The Store's methods that take a
// UID open a Dir for the one call. A Dir is for one goroutine at a time.
type Dir struct {
	s    *Store
	uid  string
	path string
	lock *Lock
	// exists: the directory existed and passed its check, or we made it.
	exists bool
	// files are the record paths made so far, by kind and interface: a
	// name is checked and its path made once per Dir.
	files map[[2]string]string
}

// OpenVMI takes the VMI's lock (as [Store.LockVMI]: waiting until it is
// free or ctx is done) and opens its record directory. [Dir.Close]
// releases the lock.
func (s *Store) OpenVMI(ctx context.Context, uid string) (*Dir, error) {
	l, err := s.LockVMI(ctx, uid)
	if err != nil {
		return nil, err
	}
	d := &Dir{s: s, uid: uid, path: filepath.Join(s.root, uid), lock: l}
	if err := d.check(); err != nil {
		return nil, errors.Join(err, l.Unlock())
	}
	return d, nil
}

// vmi opens the record directory of uid without its lock, for one call.
func (s *Store) vmi(uid string) (*Dir, error) {
	if err := CheckName("VMI UID", uid); err != nil {
		return nil, err
	}
	d := &Dir{s: s, uid: uid, path: filepath.Join(s.root, uid)}
	return d, d.check()
}

func (d *Dir) check() error {
	if err := checkExistingDirs(d.s.root, d.path); err != nil {
		return err
	}
	_, err := os.Lstat(d.path)
	d.exists = err == nil
	return nil
}

// Close removes the lock file and releases the VMI's lock ([Lock.Remove]):
// a run waiting on it takes the lock again on a new file.
func (d *Dir) Close() error {
	if d.lock == nil {
		return nil
	}
	return d.lock.Remove()
}

// file is the path of a record of the directory; its name holds the
// interface's, which is checked the first time.
func (d *Dir) file(kind, iface string) (string, error) {
	if p, ok := d.files[[2]string{kind, iface}]; ok {
		return p, nil
	}
	if err := CheckName("interface", iface); err != nil {
		return "", err
	}
	if d.files == nil {
		d.files = map[[2]string]string{}
	}
	p := filepath.Join(d.path, kind+"-"+iface+".json")
	d.files[[2]string{kind, iface}] = p
	return p, nil
}

// ReadProgress reads the progress record of an interface. A record never
// written is an error matching [ErrNotExist].
func (d *Dir) ReadProgress(iface string) (*Progress, error) {
	return readRecord(d, &Progress{}, "pod-interface", iface)
}

// ReadInterface reads the interface record of an interface. A record never
// written is an error matching [ErrNotExist].
func (d *Dir) ReadInterface(iface string) (*Interface, error) {
	return readRecord(d, &Interface{}, "interface", iface)
}

func readRecord[R versioned](d *Dir, rec R, kind, iface string) (R, error) {
	var none R
	p, err := d.file(kind, iface)
	if err != nil {
		return none, err
	}
	if err := d.read(p, rec); err != nil {
		return none, err
	}
	return rec, nil
}

// PutProgress atomically writes rec (its Version is set) without the
// directory fsync (see [Dir.Sync]); wrote is false when the file already
// held these bytes.
func (d *Dir) PutProgress(rec *Progress) (wrote bool, err error) {
	rec.Version = Version
	return d.put("pod-interface", rec.Interface, rec)
}

// PutInterface is [Dir.PutProgress] for an interface record.
func (d *Dir) PutInterface(rec *Interface) (wrote bool, err error) {
	rec.Version = Version
	return d.put("interface", rec.Interface, rec)
}

func (d *Dir) put(kind, iface string, rec any) (bool, error) {
	p, err := d.file(kind, iface)
	if err != nil {
		return false, err
	}
	return d.write(p, rec)
}

// write creates the directory on the first write, then writes one record.
func (d *Dir) write(path string, rec any) (bool, error) {
	if !d.exists {
		if err := d.s.ensureDir(d.path); err != nil {
			return false, err
		}
		d.exists = true
	}
	return d.s.writeFile(path, rec)
}

// read reads and decodes the record at path; a missing directory, like a
// missing file, is an error naming path and wrapping [ErrNotExist].
func (d *Dir) read(path string, rec versioned) error { return d.s.readFile(path, rec) }

// Delete removes both records of an interface; records that do not exist
// are not an error.
func (d *Dir) Delete(iface string) error {
	for _, kind := range []string{"pod-interface", "interface"} {
		p, err := d.file(kind, iface)
		if err != nil {
			return err
		}
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("cache: delete: %w", err)
		}
	}
	return nil
}

// Remove removes every record of the VMI and its directory; a VMI without
// records is not an error.
func (d *Dir) Remove() error {
	if err := os.RemoveAll(d.path); err != nil {
		return fmt.Errorf("cache: delete VMI %s: %w", d.uid, err)
	}
	d.exists = false
	return nil
}

// Sync makes the records put so far durable: an fsync of the directory
// (the renames) and of the root (the directory's creation). Put* and Sync
// let a writer of several records pay one directory fsync per run instead
// of one per record (the package doc says what a write guarantees before
// and after).
func (d *Dir) Sync() error {
	if !d.exists {
		return nil
	}
	if err := syncDir(d.path); err != nil {
		return err
	}
	if err := syncDir(d.s.root); err != nil {
		return err
	}
	return d.s.step(WriteDirSynced, "", d.path)
}

// RemoveTemps deletes the temporary files that writes of the VMI's records
// left when their process died (".tmp-*" in the directory) and returns how
// many it removed. Call it while no write of the VMI can be under way (on
// the Dir of [Store.OpenVMI]).
func (d *Dir) RemoveTemps() (int, error) {
	entries, err := d.list()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".tmp-") || !e.Type().IsRegular() {
			continue
		}
		if err := os.Remove(filepath.Join(d.path, e.Name())); err != nil && !os.IsNotExist(err) {
			return n, fmt.Errorf("cache: remove stale %s: %w", e.Name(), err)
		}
		n++
	}
	return n, nil
}

// HasRecords reports whether any interface record of the VMI exists (the
// namespace record and temporary files do not count).
func (d *Dir) HasRecords() (bool, error) {
	ents, err := d.list()
	return slices.ContainsFunc(ents, func(e os.DirEntry) bool {
		return filepath.Ext(e.Name()) == ".json" && e.Name() != NamespaceFile
	}), err
}

// list lists the directory (nothing before its first write).
func (d *Dir) list() ([]os.DirEntry, error) {
	if !d.exists {
		return nil, nil
	}
	ents, err := os.ReadDir(d.path)
	if err != nil {
		return nil, fmt.Errorf("cache: list %s: %w", d.path, err)
	}
	return ents, nil
}
