package nlhandle

import (
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/virtnet/virtnet/internal/nsexec"
)

// Open opens an rtnetlink handle bound to the network namespace
// at nsPath ("" is the caller's): its socket is made on a thread inside
// the namespace ([nsexec.Do]) and stays bound to it, so later requests need no
// switch. Close it when done. It is the module's one way to get a
// vishvananda/netlink handle in another namespace (netlink.NewHandleAt
// would switch a thread of its own in and out).
func Open(nsPath string) (*netlink.Handle, error) {
	var h *netlink.Handle
	err := nsexec.Do(nsPath, func() (err error) {
		h, err = netlink.NewHandle(unix.NETLINK_ROUTE)
		return err
	})
	return h, err
}
