package safefile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Sentinels matched with [errors.Is].
var (
	// ErrNotRegular is a path that is not a regular file (a FIFO, a
	// socket, a device, a directory); the message names the path and
	// the kind of file it is.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge is a file over the caller's size limit.
	ErrTooLarge = errors.New("file too large")
)

// kind names a file type for messages.
func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	}
	return "mode " + m.String()
}

// chunk is how much a read takes between two checks of its context.
const chunk = 64 << 10

// ReadIn reads the regular file name (a path relative to dir, links
// followed only inside dir) of at most limit bytes. An error names the
// file; it matches [ErrNotRegular], [ErrTooLarge], [fs.ErrNotExist] or the
// context's error where one of them is the cause.
func ReadIn(ctx context.Context, dir, name string, limit int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer func() { _ = root.Close() }() // read-only
	full := dir + string(os.PathSeparator) + name
	st, err := root.Stat(name)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w (%s)", full, ErrNotRegular, kind(st.Mode()))
	}
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only
	return read(ctx, f, full, limit)
}

// read checks that f is a regular file and reads at most limit bytes of
// it, checking ctx between chunks.
func read(ctx context.Context, f *os.File, path string, limit int64) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, kind(st.Mode()))
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%s: %w: %d bytes, limit %d", path, ErrTooLarge, st.Size(), limit)
	}
	var buf bytes.Buffer
	buf.Grow(int(st.Size()))
	lr := io.LimitReader(f, limit+1)
	p := make([]byte, chunk)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n, err := lr.Read(p)
		buf.Write(p[:n])
		if int64(buf.Len()) > limit {
			return nil, fmt.Errorf("%s: %w: over %d bytes", path, ErrTooLarge, limit)
		}
		if errors.Is(err, io.EOF) {
			return buf.Bytes(), nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
}

// Stat is os.Stat (links followed) of a path inside dir, links followed
// only inside dir.
func Stat(dir, name string) (fs.FileInfo, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer func() { _ = root.Close() }()
	return root.Stat(name)
}

// CheckReadable opens path for reading without blocking and closes it: it
// must be a regular file or, when blockOK, a block device (a PVC in block
// mode). Links are followed (the path is the operator's).
func CheckReadable(path string, blockOK bool) error {
	ok := func(m fs.FileMode) bool {
		return m.IsRegular() || blockOK && m&fs.ModeDevice != 0 && m&fs.ModeCharDevice == 0
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !ok(st.Mode()) {
		return fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, kind(st.Mode()))
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	st, err = f.Stat()
	if err != nil {
		return err
	}
	if !ok(st.Mode()) {
		return fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, kind(st.Mode()))
	}
	return nil
}
