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
	primaryLabel string            // 32 bytes as stored
	jolietLabel  string            // decoded from UCS-2, padding included
	rockRidge    bool              // SUSP "SP" entry in the root directory record
	files        map[string]string // Rock Ridge tree, read with go-diskfs
	jolietFiles  map[string]string // Joliet tree, read by walkJoliet
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
			img.jolietFiles = map[string]string{}
			walkJoliet(t, raw, binary.LittleEndian.Uint32(d[156+2:]), binary.LittleEndian.Uint32(d[156+10:]), "", img.jolietFiles, 0)
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

// walkJoliet reads the Joliet directory extent at sector loc (size bytes)
// the way a Joliet reader does, independently of the code under test.
func walkJoliet(t *testing.T, raw []byte, loc, size uint32, prefix string, out map[string]string, depth int) {
	t.Helper()
	require.Less(t, depth, 8, "directory loop")
	ext := raw[int(loc)*sectorSize:][:size]
	for off := 0; off < len(ext); {
		n := int(ext[off])
		if n == 0 {
			off = (off/sectorSize + 1) * sectorSize
			continue
		}
		rec := ext[off : off+n]
		off += n
		name := rec[33 : 33+int(rec[32])]
		if len(name) == 1 && name[0] <= 1 {
			continue // "." and ".."
		}
		require.Zero(t, len(name)%2, "UCS-2 name")
		u := make([]uint16, len(name)/2)
		for i := range u {
			u[i] = binary.BigEndian.Uint16(name[2*i:])
		}
		full := prefix + string(utf16.Decode(u))
		l, sz := binary.LittleEndian.Uint32(rec[2:]), binary.LittleEndian.Uint32(rec[10:])
		if rec[25]&2 != 0 {
			walkJoliet(t, raw, l, sz, full+"/", out, depth+1)
			continue
		}
		out[full] = string(raw[int(l)*sectorSize:][:sz])
	}
}
