package kernel

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	ethtoolGTXCSUM = 0x00000016 // ETHTOOL_GTXCSUM
	ethtoolSTXCSUM = 0x00000017 // ETHTOOL_STXCSUM
)

type ethtoolValue struct {
	cmd  uint32
	data uint32
}

type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [16]byte
}

// ethtool runs one ETHTOOL_[GS]TXCSUM ioctl, on the namespace's thread,
// on the driver's datagram socket of the namespace, made on first use.
func (n *Netlink) ethtool(name string, cmd, value uint32) (uint32, error) {
	ev := ethtoolValue{cmd: cmd, data: value}
	n.count(1)
	err := n.thr.Do(func() error {
		if n.ethfd < 0 {
			fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return fmt.Errorf("ethtool socket: %w", err)
			}
			n.ethfd = fd
		}
		var req ifreqData
		copy(req.name[:unix.IFNAMSIZ-1], name)
		req.data = unsafe.Pointer(&ev)
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(n.ethfd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&req))); errno != 0 {
			what := "get"
			if cmd == ethtoolSTXCSUM {
				what = "set"
			}
			return fmt.Errorf("ethtool: %s TX checksum offload of %q: %w", what, name, errno)
		}
		return nil
	})
	return ev.data, err
}
