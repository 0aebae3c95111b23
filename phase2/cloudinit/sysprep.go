package cloudinit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// MaxSysprepData caps the total size of a sysprep directory's files: a
// config map or secret holds at most 1 MiB.
const MaxSysprepData = 1 << 20

// Sysprep writes the files of srcDir, a mounted config map or secret, to a
// "unattendCD" image at isoPath. srcDir must hold a file named
// autounattend.xml or unattend.xml (in any case) or the result is a
// [*SourceError] wrapping [ErrNoUnattend]; fieldPath names the volume source
// in errors (e.g. "spec.volumes[1].sysprep").
//
// Only the top level is copied, and only regular files (symbolic links are
// followed: the kubelet mounts each key as a link into "..data"); the
// kubelet's own entries, whose names start with "..", are skipped.
func Sysprep(ctx context.Context, isoPath, srcDir, fieldPath string) error {
	files, err := readSysprep(srcDir, fieldPath)
	if err != nil {
		return err
	}
	return writeISO(ctx, isoPath, SysprepLabel, files)
}

// readSysprep reads and checks the files [Sysprep] puts in its image.
func readSysprep(srcDir, fieldPath string) ([]isoFile, error) {
	entries, err := os.ReadDir(srcDir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("%w: %w", ErrSecretMissing, err)
		}
		return nil, &SourceError{Path: fieldPath, File: srcDir, Err: err}
	}
	var files []isoFile
	found := false
	total := 0
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, "..") {
			continue
		}
		full := filepath.Join(srcDir, name)
		st, err := os.Stat(full) // follows the kubelet's links
		if err != nil {
			return nil, &SourceError{Path: fieldPath, File: full, Err: err}
		}
		if !st.Mode().IsRegular() {
			continue
		}
		b, err := readLimited(full, MaxSysprepData-total)
		if err != nil {
			return nil, &SourceError{Path: fieldPath, File: full, Err: err}
		}
		total += len(b)
		switch strings.ToLower(name) {
		case "autounattend.xml", "unattend.xml":
			found = true
		}
		files = append(files, isoFile{name, b})
	}
	if !found {
		return nil, &SourceError{Path: fieldPath, File: srcDir, Err: ErrNoUnattend}
	}
	return files, nil
}

// readLimited reads name, failing with ErrTooLarge past limit bytes.
func readLimited(name string, limit int) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, fmt.Errorf("%w: sysprep files over %d bytes in total", ErrTooLarge, MaxSysprepData)
	}
	return b, nil
}
