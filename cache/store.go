package cache

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/virtnet/virtnet/internal/names"
	"github.com/virtnet/virtnet/internal/safefile"
)

// DefaultRoot is KubeVirt's private directory, where virt-handler and
// virt-launcher both see the caches.
const DefaultRoot = "/var/run/kubevirt-private"

// Modes of what the store creates.
const (
	DirMode  fs.FileMode = 0o755
	FileMode fs.FileMode = 0o644
)

// MaxRecordSize bounds a record file; larger files are corrupt.
const MaxRecordSize = 1 << 20

// Store reads and writes records under one root directory. It holds no
// open files; several goroutines may use one Store.
type Store struct {
	root string
	// beforeRename, when set (tests only), runs between writing the
	// temporary file and renaming it into place.
	beforeRename func(tmp string) error
	// hook, when set ([Store.WithHook]), runs at each step of a write.
	hook Hook
}

// WriteStep names a point inside the atomic write of one record.
type WriteStep string

// The steps of a write, in order.
const (
	// WriteTempCreated: the temporary file exists, empty.
	WriteTempCreated WriteStep = "temporary file created"
	// WriteTempWritten: the temporary file holds the record, unsynced.
	WriteTempWritten WriteStep = "temporary file written"
	// WriteTempSynced: the temporary file is complete and fsynced.
	WriteTempSynced WriteStep = "temporary file synced"
	// WriteRenamed: the record is in place; its directory is not synced.
	WriteRenamed WriteStep = "renamed into place"
	// WriteDirSynced: [Dir.Sync] fsynced the VMI's directory and the
	// root (the temporary file is ""; the path is the directory).
	WriteDirSynced WriteStep = "directory synced"
)

// Hook runs at each [WriteStep] of every record write, with the temporary
// file and the record's path; an error fails the write at that step. It
// is for fault-injection tests: a kill or a full disk half-way through.
type Hook func(step WriteStep, tmp, path string) error

// WithHook returns a store on the same root that calls h inside every
// record write.
func (s *Store) WithHook(h Hook) *Store {
	c := *s
	c.hook = h
	return &c
}

func (s *Store) step(step WriteStep, tmp, path string) error {
	if s.hook == nil {
		return nil
	}
	if err := s.hook(step, tmp, path); err != nil {
		return fmt.Errorf("cache: write %s: %s: %w", path, step, err)
	}
	return nil
}

// New returns a store rooted at root, which must be an absolute path. The
// root is created (0755) on the first write.
func New(root string) (*Store, error) {
	if !filepath.IsAbs(root) || strings.ContainsRune(root, 0) {
		return nil, &NameError{Field: "root", Value: root}
	}
	return &Store{root: filepath.Clean(root)}, nil
}

// Root is the store's root directory.
func (s *Store) Root() string { return s.root }

// CheckName reports whether name can be a VMI UID or interface name in a
// cache path; field names it in the error.
func CheckName(field, name string) error {
	if !names.FileName(name) {
		return &NameError{Field: field, Value: name}
	}
	return nil
}

func (s *Store) path(uid, iface, kind string) (string, error) {
	if err := CheckName("VMI UID", uid); err != nil {
		return "", err
	}
	d := &Dir{s: s, uid: uid, path: filepath.Join(s.root, uid)}
	return d.file(kind, iface)
}

// ProgressPath is where the progress record of an interface lives
// (the file pod-interface-<iface>.json).
func (s *Store) ProgressPath(uid, iface string) (string, error) {
	return s.path(uid, iface, "pod-interface")
}

// InterfacePath is where the interface record of an interface lives.
func (s *Store) InterfacePath(uid, iface string) (string, error) {
	return s.path(uid, iface, "interface")
}

// ReadProgress reads the progress record of an interface (see
// [Dir.ReadProgress]).
func (s *Store) ReadProgress(uid, iface string) (*Progress, error) {
	return onDir(s, uid, func(d *Dir) (*Progress, error) { return d.ReadProgress(iface) })
}

// ReadInterface reads the interface record of an interface (see
// [Dir.ReadInterface]).
func (s *Store) ReadInterface(uid, iface string) (*Interface, error) {
	return onDir(s, uid, func(d *Dir) (*Interface, error) { return d.ReadInterface(iface) })
}

// Delete removes both records of an interface; records that do not exist
// are not an error. Like reads and writes, it refuses an unsafe root or
// record directory, so that it never removes files through a link.
func (s *Store) Delete(uid, iface string) error {
	_, err := onDir(s, uid, func(d *Dir) (any, error) { return nil, d.Delete(iface) })
	return err
}

// DeleteVMI removes every record of a VMI; a VMI without records is not an
// error. It refuses an unsafe root or record directory.
func (s *Store) DeleteVMI(uid string) error {
	_, err := onDir(s, uid, func(d *Dir) (any, error) { return nil, d.Remove() })
	return err
}

// onDir runs f on the record directory of uid, opened for the one call.
func onDir[T any](s *Store, uid string, f func(*Dir) (T, error)) (T, error) {
	d, err := s.vmi(uid)
	if err != nil {
		var none T
		return none, err
	}
	return f(d)
}

// list checks dirs ([checkExistingDirs]) and lists the last of them; one
// that does not exist lists nothing.
func list(dirs ...string) ([]os.DirEntry, error) {
	if err := checkExistingDirs(dirs...); err != nil {
		return nil, err
	}
	dir := dirs[len(dirs)-1]
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("cache: list %s: %w", dir, err)
	}
	return ents, nil
}

// checkExistingDirs checks the directories that exist, in order, and
// stops at the first that does not (nothing below it can exist either).
func checkExistingDirs(dirs ...string) error {
	for _, d := range dirs {
		if _, err := os.Lstat(d); os.IsNotExist(err) {
			return nil
		}
		if err := checkDir(d); err != nil {
			return err
		}
	}
	return nil
}

// writeFile writes one record atomically (temporary file, fsync, rename)
// into its existing directory, without syncing the directory; wrote is false when the file already
// held the record's bytes.
func (s *Store) writeFile(path string, rec any) (wrote bool, err error) {
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return false, fmt.Errorf("cache: encode %s: %w", path, err)
	}
	data = append(data, '\n')
	dir := filepath.Dir(path)
	switch err := checkFile(path); {
	case err == nil:
		// A re-run writes the same record again: leave the file (and
		// its fsyncs) alone when its bytes already are the new ones.
		if same, _ := sameContent(path, data); same {
			return false, nil
		}
	case !os.IsNotExist(err):
		return false, err
	}
	tmp, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return false, fmt.Errorf("cache: write %s: %w", path, err)
	}
	tmpName := tmp.Name()
	// The step hooks' errors come back as they are (they name the step);
	// the writer's own are wrapped here.
	var hookErr error
	renamed := false
	steps := [...]WriteStep{safefile.Created: WriteTempCreated, safefile.Written: WriteTempWritten,
		safefile.Synced: WriteTempSynced, safefile.Renamed: WriteRenamed}
	err = safefile.Replace(tmp, path, func(f *os.File) error {
		if _, err := f.Write(data); err != nil {
			return err
		}
		return f.Chmod(FileMode)
	}, func(st safefile.Stage) error {
		renamed = st == safefile.Renamed
		if hookErr = s.step(steps[st], tmpName, path); hookErr != nil {
			return hookErr
		}
		if st == safefile.Synced && s.beforeRename != nil {
			if err := s.beforeRename(tmpName); err != nil {
				hookErr = fmt.Errorf("cache: write %s: %w", path, err)
				return hookErr
			}
		}
		return nil
	})
	if err != nil && hookErr == nil {
		err = fmt.Errorf("cache: write %s: %w", path, err)
	}
	return err == nil || renamed, err
}

// sameContent reports whether the regular file at path holds exactly data
// (read without following a link).
func sameContent(path string, data []byte) (bool, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		return false, err
	}
	defer f.Close()
	have, err := io.ReadAll(io.LimitReader(f, int64(len(data))+1))
	if err != nil {
		return false, err
	}
	return bytes.Equal(have, data), nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("cache: sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("cache: sync %s: %w", dir, err)
	}
	return nil
}

// ensureDir creates the root and the record directory (0755) and checks
// that neither is unsafe.
func (s *Store) ensureDir(dir string) error {
	for _, d := range []string{s.root, dir} {
		created := true
		if err := os.Mkdir(d, DirMode); err != nil {
			switch {
			case os.IsExist(err):
				created = false
			case os.IsNotExist(err) && d == s.root:
				if err := os.MkdirAll(d, DirMode); err != nil {
					return fmt.Errorf("cache: %w", err) // names the path
				}
			default:
				return fmt.Errorf("cache: %w", err)
			}
		}
		if err := checkDir(d); err != nil {
			return err
		}
		// Mkdir applies the umask; the launcher (another uid) must be
		// able to enter what we create, whatever the caller's umask.
		if created {
			if err := os.Chmod(d, DirMode); err != nil {
				return fmt.Errorf("cache: %w", err) // names the path
			}
		}
	}
	return nil
}

// trustedOwner reports whether fi is owned by root or by us; on an OS
// without uids (fileOwner has none to give) it trusts the file.
func trustedOwner(fi fs.FileInfo) (uint32, bool) {
	uid, ok := fileOwner(fi)
	return uid, !ok || uid == 0 || int(uid) == os.Geteuid()
}

func checkDir(d string) error { return checkPath(d, true) }

func checkFile(p string) error { return checkPath(p, false) }

// checkPath refuses a directory (dir) or a regular file that another user
// could control: a symlink, another type, world-writable, or owned by
// neither root nor us.
func checkPath(p string, dir bool) error {
	fi, err := os.Lstat(p)
	if err != nil && dir {
		return fmt.Errorf("cache: %w", err)
	} else if err != nil {
		return err // the callers ask os.IsNotExist
	}
	kind, mode := "file", fmt.Sprintf("%04o", fi.Mode().Perm())
	if dir {
		kind, mode = "directory", fi.Mode().String()
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return &UnsafeError{Path: p, Reason: kind + " is a symlink"}
	case dir && !fi.IsDir():
		return &UnsafeError{Path: p, Reason: "not a directory"}
	case !dir && !fi.Mode().IsRegular():
		return &UnsafeError{Path: p, Reason: "not a regular file"}
	case fi.Mode().Perm()&0o002 != 0:
		// Sticky or not: in a world-writable directory (even /tmp's
		// 1777) another user can take the names of records,
		// directories and lock files first.
		return &UnsafeError{Path: p, Reason: fmt.Sprintf("%s is world-writable (mode %s)", kind, mode)}
	}
	if uid, ok := trustedOwner(fi); !ok {
		return &UnsafeError{Path: p, Reason: fmt.Sprintf("%s is owned by uid %d, neither root nor us", kind, uid)}
	}
	return nil
}

// readFile reads and decodes the record at path, in a checked directory;
// a missing file is an error naming path and wrapping [ErrNotExist].
func (s *Store) readFile(path string, rec versioned) error {
	if err := checkFile(path); err != nil {
		if os.IsNotExist(err) {
			return fmt.Errorf("cache: %s: %w", path, ErrNotExist)
		}
		return err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		if os.IsNotExist(err) {
			return fmt.Errorf("cache: %s: %w", path, ErrNotExist)
		}
		return fmt.Errorf("cache: read %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxRecordSize+1))
	if err != nil {
		return fmt.Errorf("cache: read %s: %w", path, err)
	}
	return Decode(path, data, rec)
}

// Decode parses one record's bytes; path names the file in errors. It is
// exported for the fuzz target and for tools that read caches from
// elsewhere.
func Decode(path string, data []byte, rec versioned) error {
	if len(data) > MaxRecordSize {
		return &CorruptError{Path: path, Err: fmt.Errorf("larger than %d bytes", MaxRecordSize)}
	}
	var head struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return &CorruptError{Path: path, Err: err}
	}
	if head.Version == nil {
		return &CorruptError{Path: path, Err: fmt.Errorf("no version field")}
	}
	if *head.Version < MinReadVersion || *head.Version > Version {
		return &VersionError{Path: path, Got: *head.Version, Want: Version}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(rec); err != nil {
		if field, value, ferr := badValue(data, reflect.TypeOf(rec)); ferr != nil {
			return &CorruptError{Path: path, Field: field, Value: value, Err: ferr}
		}
		return &CorruptError{Path: path, Err: err}
	}
	if dec.More() {
		return &CorruptError{Path: path, Err: fmt.Errorf("trailing data after the record")}
	}
	return nil
}
