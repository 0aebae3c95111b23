// Package uuidv5 computes name-based version-5 (SHA-1) UUIDs (RFC 9562,
// section 5.5), which api and domxml derive firmware and domain UUIDs
// with. It replaces github.com/google/uuid in those packages: that module
// imports crypto/rand, crypto/md5 and database/sql/driver, whose package
// initialisation every CNI process importing api would pay
// (docs/cni-startup.md).
package uuidv5

import (
	"crypto/sha1" // RFC 9562 version 5 is SHA-1 by definition
	"encoding/hex"
	"fmt"
	"strings"
)

// SHA1 is the version-5 UUID of name under the name-space UUID namespace
// (its text form, "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"), lower case.
// It panics when namespace is not a UUID in that form: callers pass
// constants.
func SHA1(namespace, name string) string {
	ns, err := parse(namespace)
	if err != nil {
		panic(err)
	}
	h := sha1.New()
	h.Write(ns[:])
	h.Write([]byte(name))
	var u [16]byte
	copy(u[:], h.Sum(nil))
	u[6] = u[6]&0x0f | 0x50 // version 5
	u[8] = u[8]&0x3f | 0x80 // variant 10 (RFC 9562)
	s := hex.EncodeToString(u[:])
	return s[0:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:32]
}

func parse(s string) ([16]byte, error) {
	var u [16]byte
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, fmt.Errorf("uuidv5: name space %q is not a UUID", s)
	}
	b, err := hex.DecodeString(strings.ReplaceAll(s, "-", ""))
	if err != nil {
		return u, fmt.Errorf("uuidv5: name space %q: %w", s, err)
	}
	copy(u[:], b)
	return u, nil
}
