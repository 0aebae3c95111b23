package cache

import (
	"fmt"
	"io/fs"
)

// ErrNotExist is matched by the error of reading a record that was never
// written (it also matches [fs.ErrNotExist]).
var ErrNotExist = fmt.Errorf("cache record does not exist: %w", fs.ErrNotExist)

// NameError is a VMI UID or interface name that cannot be a file name
// under the root.
type NameError struct {
	Field string
	Value string
}

// Permanent reports true: the name is the caller's.
func (e *NameError) Permanent() bool { return true }

func (e *NameError) Error() string {
	return fmt.Sprintf("cache: %s %q cannot name a cache file (empty, '.', '..', '/', NUL or over 253 bytes)", e.Field, e.Value)
}

// CorruptError is a cache file that is not a valid record. When the
// record is well-formed JSON but a value is not of its field's type (an
// address, a prefix, a MAC), Field names it by its JSON path
// ("routes[1].dst") and Value holds it.
type CorruptError struct {
	Path         string
	Field, Value string
	Err          error
}

// Permanent reports true: a re-run reads the same record.
func (e *CorruptError) Permanent() bool { return true }

func (e *CorruptError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("cache: %s is corrupt: %s %q: %v", e.Path, e.Field, e.Value, e.Err)
	}
	return fmt.Sprintf("cache: %s is corrupt: %v", e.Path, e.Err)
}
func (e *CorruptError) Unwrap() error { return e.Err }

// VersionError is a record written by another schema version.
type VersionError struct {
	Path      string
	Got, Want int
}

// Permanent reports true: the record's version does not change by itself.
func (e *VersionError) Permanent() bool { return true }

func (e *VersionError) Error() string {
	if MinReadVersion < e.Want {
		return fmt.Sprintf("cache: %s has schema version %d, this library reads versions %d to %d", e.Path, e.Got, MinReadVersion, e.Want)
	}
	return fmt.Sprintf("cache: %s has schema version %d, this library reads version %d", e.Path, e.Got, e.Want)
}

// UnsafeError is a cache path refused because another user could control
// it.
type UnsafeError struct {
	Path   string
	Reason string
}

// Permanent reports true: someone must fix the directory or file.
func (e *UnsafeError) Permanent() bool { return true }

func (e *UnsafeError) Error() string { return fmt.Sprintf("cache: refusing %s: %s", e.Path, e.Reason) }
