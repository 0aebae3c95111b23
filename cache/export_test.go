package cache

import "path/filepath"

// WriteProgress is PutProgress plus an fsync of the record's directory:
// the store's tests write one record at a time through it.
func (s *Store) WriteProgress(uid string, rec *Progress) error {
	p, err := s.ProgressPath(uid, rec.Interface)
	if err != nil {
		return err
	}
	rec.Version = Version
	return s.write(p, rec)
}

// WriteInterface is PutInterface plus an fsync of the record's directory.
func (s *Store) WriteInterface(uid string, rec *Interface) error {
	p, err := s.InterfacePath(uid, rec.Interface)
	if err != nil {
		return err
	}
	rec.Version = Version
	return s.write(p, rec)
}

func (s *Store) write(path string, rec any) error {
	wrote, err := s.writeFile(path, rec)
	if err != nil || !wrote {
		return err
	}
	return syncDir(filepath.Dir(path))
}
