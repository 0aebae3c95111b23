//go:build !linux

package kvplugin

import "errors"

var errNotLinux = errors.New("kvplugin: link aliases need Linux")

// WriteAlias needs Linux.
func WriteAlias(nsPath, link, alias string) error { return errNotLinux }

// ReadAlias needs Linux.
func ReadAlias(nsPath, link string) (alias, typ string, err error) { return "", "", errNotLinux }

// ReadRecord needs Linux.
func ReadRecord(nsPath, binding, podIface string, primary bool) (*RecordSource, error) {
	return nil, errNotLinux
}
