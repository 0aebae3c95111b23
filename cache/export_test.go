package cache

// WriteProgress is PutProgress plus an fsync of the record's directory:
// the store's tests write one record at a time through it.
func (s *Store) WriteProgress(uid string, rec *Progress) error {
	return s.write(uid, func(d *Dir) (bool, error) { return d.PutProgress(rec) })
}

// WriteInterface is PutInterface plus an fsync of the record's directory.
func (s *Store) WriteInterface(uid string, rec *Interface) error {
	return s.write(uid, func(d *Dir) (bool, error) { return d.PutInterface(rec) })
}

func (s *Store) write(uid string, put func(*Dir) (bool, error)) error {
	d, err := s.vmi(uid)
	if err != nil {
		return err
	}
	wrote, err := put(d)
	if err != nil || !wrote {
		return err
	}
	return syncDir(d.path)
}
