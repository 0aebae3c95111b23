package prestart

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/virtnet/virtnet/internal/safefile"
)

// stagingSuffix marks a file being written; it is renamed into place only
// when complete.
const stagingSuffix = ".staging"

// mkdirAll creates dir and its missing parents (mode 0755), recording each
// directory it made.
func (st *State) mkdirAll(dir string) error {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		_, err := os.Stat(d)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		missing = append(missing, d)
		if d == filepath.Dir(d) {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		st.Created(missing[i])
	}
	return nil
}

// exists reports whether path exists (following links).
func exists(path string) (bool, error) {
	_, err := os.Stat(path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, err
}

// createFile makes path through "<path>.staging" ([safefile.Replace]):
// write fills the staging file, which is synced and renamed into place. On
// any error the staging file is removed and path is not created. The
// directory must exist.
func createFile(path string, mode os.FileMode, write func(f *os.File) error) error {
	f, err := os.OpenFile(path+stagingSuffix, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	return safefile.Replace(f, path, write, nil)
}
