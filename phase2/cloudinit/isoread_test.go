package cloudinit

import (
	"bytes"
	"encoding/binary"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"unicode/utf16"

	"github.com/diskfs/go-diskfs/backend/file"
	"github.com/diskfs/go-diskfs/filesystem/iso9660"
	"github.com/stretchr/testify/require"
)

// image is what a test sees of an ISO: the labels in the primary and the
// Joliet volume descriptor (raw bytes, padding included) and the files
// (Rock Ridge names) with their contents, read with go-diskfs.
type image struct {
	primaryLabel string // 32 bytes as stored
	jolietLabel  string // decoded from UCS-2, padding included
	rockRidge    bool   // SUSP "SP" entry in the root directory record
	files        map[string]string
}

func readImage(t *testing.T, path string) image {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var img image
	for i := range maxDescriptors {
		d := raw[firstDescriptor+i*sectorSize:][:sectorSize]
		require.Equal(t, "CD001", string(d[1:6]), "descriptor %d", i)
		if d[0] == typeTerminator {
			break
		}
		id := d[volumeIDOffset : volumeIDOffset+volumeIDLength]
		switch d[0] {
		case typePrimary:
			img.primaryLabel = string(id)
			require.Equal(t, "0000000000000000\x00", string(d[expirationOffset:expirationOffset+dateLength]), "expiration date not 'unspecified'")
			// Rock Ridge announces itself with a SUSP "SP" entry at the
			// start of the System Use area of the root's "." record, the
			// first record of the root extent (34 bytes before it).
			root := int(binary.LittleEndian.Uint32(d[156+2:])) * sectorSize
			img.rockRidge = string(raw[root+34:root+36]) == "SP"
		case typeSupplement:
			require.Equal(t, "%/E", string(d[88:91]), "Joliet UCS-2 level 3 escape")
			u := make([]uint16, 0, volumeIDLength/2)
			for j := 0; j < len(id); j += 2 {
				u = append(u, uint16(id[j])<<8|uint16(id[j+1]))
			}
			img.jolietLabel = string(utf16.Decode(u))
		}
	}

	f, err := os.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	st, err := f.Stat()
	require.NoError(t, err)
	fsys, err := iso9660.Read(file.New(f, true), st.Size(), 0, sectorSize)
	require.NoError(t, err)
	img.files = map[string]string{}
	require.NoError(t, fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fsys.ReadFile(p)
		img.files[p] = string(b)
		return err
	}))
	return img
}

func pad(s string, n int) string { return s + string(bytes.Repeat([]byte{' '}, n-len(s))) }

// listTree lists every file and directory under dir (relative paths),
// for "nothing left behind" checks.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	sort.Strings(out)
	return out
}
