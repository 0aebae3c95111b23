package prestart

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// HasNetAdmin reports whether the calling thread's effective capabilities
// include CAP_NET_ADMIN (`grep CapEff /proc/thread-self/status`, bit 12).
// libvirt, which runs in the same container with the same capabilities,
// needs it to create the tap of <interface type='bridge'>.
func HasNetAdmin() (bool, error) {
	var data [2]unix.CapUserData
	if err := unix.Capget(&unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}, &data[0]); err != nil {
		return false, fmt.Errorf("capget: %w", err)
	}
	return data[unix.CAP_NET_ADMIN/32].Effective&(1<<(unix.CAP_NET_ADMIN%32)) != 0, nil
}
