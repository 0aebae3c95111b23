package cache

import (
	"errors"
	"fmt"
	"path/filepath"
)

// NamespaceFile is the file in a VMI's record directory that binds its
// records to the network namespace they describe.
const NamespaceFile = "netns.json"

// Namespace is the namespace record: the identity of the network
// namespace (its nsfs device and inode, the same for every path of it)
// the VMI's records describe.
type Namespace struct {
	Version int `json:"version"`
	// ID is "<dev>:<ino>" of the namespace's nsfs file.
	ID string `json:"id"`
	// Attachment is the CNI attachment the records are of, when a CNI
	// plugin runs phase1 (for its GC).
	Attachment *Attachment `json:"attachment,omitempty"`
}

// Attachment names a CNI attachment: the container ID and CNI_IFNAME.
type Attachment struct {
	ContainerID string `json:"containerID"`
	IfName      string `json:"ifname"`
	// Network is the CNI network's name: GC, which is given the valid
	// attachments of one network, touches only that network's records.
	Network string `json:"network,omitempty"`
	// AddID is new (random) at every ADD, so that every ADD rewrites the
	// namespace record: a GC that finds it changed under the
	// attachment's lock ([Store.LockAttachment]) knows that an ADD ran
	// since the GC began, and leaves the records.
	AddID string `json:"addID,omitempty"`
}

func (r *Namespace) version() int { return r.Version }

// NamespaceMismatchError is a run or cleanup given a network namespace
// other than the one the VMI's records describe: another pod's, or a new
// namespace of a reused container ID.
type NamespaceMismatchError struct {
	UID string
	// Recorded is the namespace of the records, Got the one given.
	Recorded, Got string
}

func (e *NamespaceMismatchError) Error() string {
	return fmt.Sprintf("cache: the records of VMI %s describe network namespace %s, not %s (another pod's namespace, or a reused ID): refusing to touch either",
		e.UID, e.Recorded, e.Got)
}

// Permanent is true: a retry gets the same namespace.
func (e *NamespaceMismatchError) Permanent() bool { return true }

// RecordedNamespace reads the VMI's namespace record (see
// [Dir.RecordedNamespace]).
func (s *Store) RecordedNamespace(uid string) (*Namespace, error) {
	return onDir(s, uid, (*Dir).RecordedNamespace)
}

// RecordedNamespace reads the VMI's namespace record; one never written
// is an error matching [ErrNotExist].
func (d *Dir) RecordedNamespace() (*Namespace, error) {
	rec := &Namespace{}
	if err := d.read(filepath.Join(d.path, NamespaceFile), rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// CheckNamespace refuses, with a [*NamespaceMismatchError], a namespace
// id other than the one the VMI's namespace record holds; a VMI without
// one passes.
func (d *Dir) CheckNamespace(id string) error {
	rec, err := d.RecordedNamespace()
	switch {
	case errors.Is(err, ErrNotExist):
		return nil
	case err != nil:
		return err
	case rec.ID != id:
		return &NamespaceMismatchError{UID: d.uid, Recorded: rec.ID, Got: id}
	}
	return nil
}

// PutNamespace writes the VMI's namespace record (no directory fsync: see
// [Dir.Sync]), after [Dir.CheckNamespace]. att, when not nil, is
// recorded with it; nil keeps the one recorded.
func (d *Dir) PutNamespace(id string, att *Attachment) (wrote bool, err error) {
	if err := d.CheckNamespace(id); err != nil {
		return false, err
	}
	if att == nil {
		if old, err := d.RecordedNamespace(); err == nil {
			att = old.Attachment
		}
	}
	return d.write(filepath.Join(d.path, NamespaceFile), &Namespace{Version: Version, ID: id, Attachment: att})
}

// VMIs lists the VMI UIDs that have a record directory under the root.
func (s *Store) VMIs() ([]string, error) {
	ents, err := list(s.root)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && CheckName("VMI UID", e.Name()) == nil {
			out = append(out, e.Name())
		}
	}
	return out, nil
}
