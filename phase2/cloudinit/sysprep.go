package cloudinit

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/virtnet/virtnet/internal/safefile"
)

// MaxSysprepData caps the total size of a sysprep directory's files: a
// config map or secret holds at most 1 MiB.
const MaxSysprepData = 1 << 20

// readSysprep reads and checks the files of srcDir, a mounted config map
// or secret, for a "unattendCD" image. srcDir must hold a file named
// autounattend.xml or unattend.xml (in any case) or the result is an
// [ErrBadSource] error wrapping [ErrNoUnattend]; fieldPath names the volume
// source in errors (e.g. "spec.volumes[1].sysprep").
//
// Only the top level is copied: subdirectories and the kubelet's own
// entries, whose names start with "..", are skipped. Symbolic links are
// followed while they stay inside srcDir (the kubelet mounts each key as a
// link into "..data"); a link leading out, or an entry that is neither a
// regular file nor a directory (a FIFO, a socket, a device), is refused
// with an [ErrBadSource] error ([ErrNotRegular] for the latter) without
// blocking. ctx ends the reads.
func readSysprep(ctx context.Context, srcDir, fieldPath string) ([]isoFile, error) {
	entries, err := os.ReadDir(srcDir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("%w: %w", ErrSecretMissing, err)
		}
		return nil, sourceError(fieldPath, srcDir, err)
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
		st, err := safefile.Stat(srcDir, name) // follows the kubelet's links
		if err != nil {
			return nil, sourceError(fieldPath, full, err)
		}
		if st.IsDir() {
			continue
		}
		b, err := safefile.ReadIn(ctx, srcDir, name, int64(MaxSysprepData-total))
		if errors.Is(err, safefile.ErrTooLarge) {
			err = fmt.Errorf("%w: sysprep files over %d bytes in total", ErrTooLarge, MaxSysprepData)
		}
		if err != nil {
			return nil, sourceError(fieldPath, full, err)
		}
		total += len(b)
		switch strings.ToLower(name) {
		case "autounattend.xml", "unattend.xml":
			found = true
		}
		files = append(files, isoFile{name, b})
	}
	if !found {
		return nil, sourceError(fieldPath, srcDir, ErrNoUnattend)
	}
	return files, nil
}
