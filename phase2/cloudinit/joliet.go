package cloudinit

import (
	"encoding/binary"
	"fmt"
	"os"
)

// fixJolietSubdirs repairs a go-diskfs v1.9.4 bug found by mounting its
// images with Linux (mount -o norock): in the Joliet tree, the record of a
// subdirectory points at the primary tree's extent of that directory, not
// at its Joliet extent, so below the first level a Joliet reader (Windows;
// Linux without Rock Ridge) decodes 8-bit short names as UCS-2 and shows
// garbage ("openstack/䱁呅協"). The Joliet path table is right, so each
// subdirectory record is pointed at the extent the path table gives for its
// (parent, name), with that extent's length. Images without Joliet or
// without subdirectories are left as they are.
func fixJolietSubdirs(f *os.File) error {
	svd, ok, err := jolietDescriptor(f)
	if err != nil || !ok {
		return err
	}
	ptSize := binary.LittleEndian.Uint32(svd[132:])
	ptLoc := binary.LittleEndian.Uint32(svd[140:])
	if ptSize == 0 || ptSize > 1<<20 {
		return fmt.Errorf("joliet path table size %d", ptSize)
	}
	pt := make([]byte, ptSize)
	if _, err := f.ReadAt(pt, int64(ptLoc)*sectorSize); err != nil {
		return fmt.Errorf("read joliet path table: %w", err)
	}
	// Path table records (ECMA-119 9.4), numbered from 1 in order.
	type dir struct {
		loc    uint32
		parent uint16
		name   string
	}
	var dirs []dir
	for off := 0; off+8 <= len(pt); {
		n := int(pt[off])
		if n == 0 || off+8+n > len(pt) {
			break
		}
		dirs = append(dirs, dir{
			loc:    binary.LittleEndian.Uint32(pt[off+2:]),
			parent: binary.LittleEndian.Uint16(pt[off+6:]),
			name:   string(pt[off+8 : off+8+n]),
		})
		off += 8 + n + n%2
	}
	type key struct {
		parent uint32
		name   string
	}
	want := map[key]uint32{}
	for i, d := range dirs {
		if i == 0 || int(d.parent) < 1 || int(d.parent) > len(dirs) {
			continue // the root, or a record that names no parent
		}
		want[key{dirs[d.parent-1].loc, d.name}] = d.loc
	}
	for _, d := range dirs {
		extent, err := readExtent(f, d.loc)
		if err != nil {
			return err
		}
		changed := false
		for off := 0; off < len(extent); {
			n := int(extent[off])
			if n == 0 { // records do not cross sectors: skip to the next
				off = (off/sectorSize + 1) * sectorSize
				continue
			}
			if off+n > len(extent) || n < 34 {
				return fmt.Errorf("joliet directory at sector %d: bad record at %d", d.loc, off)
			}
			rec := extent[off : off+n]
			nameLen := int(rec[32])
			name := string(rec[33 : 33+nameLen])
			if rec[25]&2 != 0 && name != "\x00" && name != "\x01" {
				loc, ok := want[key{d.loc, name}]
				if !ok {
					return fmt.Errorf("joliet directory at sector %d: subdirectory record not in the path table", d.loc)
				}
				if binary.LittleEndian.Uint32(rec[2:]) != loc {
					target, err := readExtent(f, loc)
					if err != nil {
						return err
					}
					size := binary.LittleEndian.Uint32(target[10:])
					binary.LittleEndian.PutUint32(rec[2:], loc)
					binary.BigEndian.PutUint32(rec[6:], loc)
					binary.LittleEndian.PutUint32(rec[10:], size)
					binary.BigEndian.PutUint32(rec[14:], size)
					changed = true
				}
			}
			off += n
		}
		if changed {
			if _, err := f.WriteAt(extent, int64(d.loc)*sectorSize); err != nil {
				return fmt.Errorf("write joliet directory at sector %d: %w", d.loc, err)
			}
		}
	}
	return nil
}

// jolietDescriptor returns the Joliet supplementary volume descriptor, if
// there is one.
func jolietDescriptor(f *os.File) ([]byte, bool, error) {
	buf := make([]byte, sectorSize)
	for i := range maxDescriptors {
		if _, err := f.ReadAt(buf, int64(firstDescriptor+i*sectorSize)); err != nil {
			return nil, false, fmt.Errorf("read volume descriptor %d: %w", i, err)
		}
		switch {
		case buf[0] == typeTerminator:
			return nil, false, nil
		case buf[0] == typeSupplement && buf[88] == '%' && buf[89] == '/':
			return buf, true, nil
		}
	}
	return nil, false, nil
}

// readExtent reads the directory extent at sector loc, its length taken
// from its first record (".").
func readExtent(f *os.File, loc uint32) ([]byte, error) {
	first := make([]byte, sectorSize)
	if _, err := f.ReadAt(first, int64(loc)*sectorSize); err != nil {
		return nil, fmt.Errorf("read directory at sector %d: %w", loc, err)
	}
	size := binary.LittleEndian.Uint32(first[10:])
	if first[0] < 34 || size == 0 || size > 1<<20 {
		return nil, fmt.Errorf("directory at sector %d: bad self record (length %d)", loc, size)
	}
	// go-diskfs records the bytes used, not whole sectors; read whole ones.
	sectors := (size + sectorSize - 1) / sectorSize
	if sectors == 1 {
		return first, nil
	}
	all := make([]byte, sectors*sectorSize)
	if _, err := f.ReadAt(all, int64(loc)*sectorSize); err != nil {
		return nil, fmt.Errorf("read directory at sector %d: %w", loc, err)
	}
	return all, nil
}
