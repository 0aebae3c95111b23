//go:build !linux

package dhcp

func socketHolder(int, bool) string { return "" }
