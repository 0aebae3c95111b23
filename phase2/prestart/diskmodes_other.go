//go:build !linux

package prestart

// DirectIOSupported reports false: O_DIRECT, which QEMU's cache none
// needs, is Linux's open flag, and the preStartHook runs on a Linux node.
// This file lets a launcher on another OS build the package (to render
// domain XML); a disk there gets writethrough.
func DirectIOSupported(string) (bool, error) { return false, nil }

// preallocated reports false off Linux (io native needs cache none).
func preallocated(string) bool { return false }
