package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/virtnet/virtnet/netdriver"
)

var _ netdriver.LinksDeleter = (*Netlink)(nil)

// DeleteLinks implements [netdriver.LinksDeleter] with the kernel's group
// deletion (`ip link set NAME group G` for each link, then `ip link del
// group G`): G is a random device group no link of the namespace is in,
// so the deletion takes these links and no other, and the kernel
// unregisters them together, paying its grace periods once. A failure
// before the deletion falls back to deleting the rest one by one (a link
// left in group G is still deleted). One or no link is [Netlink.DeleteLink].
func (n *Netlink) DeleteLinks(names ...string) error {
	if len(names) < 2 {
		for _, name := range names {
			if err := n.DeleteLink(name); err != nil {
				return err
			}
		}
		return nil
	}
	err := n.deleteGroup(names)
	if err == nil {
		return nil
	}
	for _, name := range names {
		if derr := n.DeleteLink(name); derr != nil {
			return errors.Join(err, derr)
		}
	}
	return nil
}

// deleteGroup moves the links into a free device group and deletes the
// group.
func (n *Netlink) deleteGroup(names []string) error {
	used, err := n.groups()
	if err != nil {
		return err
	}
	var g uint32
	for g == 0 || used[g] {
		g = rand.Uint32() | 1<<24 // clear of the small groups people name
	}
	moved := 0
	for _, name := range names {
		err := n.withRef(name, func(l netlink.Link) error { return n.h.LinkSetGroup(l, int(g)) })
		switch {
		case netdriver.IsLinkNotFound(err) || errors.Is(err, unix.ENODEV):
			continue
		case err != nil:
			return fmt.Errorf("move link %q to group %d: %w", name, g, err)
		}
		moved++
	}
	for _, name := range names {
		n.forget(name)
	}
	if moved == 0 {
		return nil
	}
	req := nl.NewNetlinkRequest(unix.RTM_DELLINK, unix.NLM_F_ACK)
	req.AddData(nl.NewIfInfomsg(unix.AF_UNSPEC))
	req.AddData(nl.NewRtAttr(unix.IFLA_GROUP, nl.Uint32Attr(g)))
	n.count(1)
	if err := n.thr.Do(func() error {
		_, err := req.Execute(unix.NETLINK_ROUTE, 0)
		return err
	}); err != nil {
		return fmt.Errorf("delete link group %d (%v): %w", g, names, err)
	}
	return nil
}

// groups returns the device groups the namespace's links are in.
func (n *Netlink) groups() (map[uint32]bool, error) {
	n.count(1)
	msgs, err := retryDump(func() ([]syscall.NetlinkMessage, error) {
		return n.rtRequest(unix.RTM_GETLINK, true, make([]byte, unix.SizeofIfInfomsg))
	})
	if err != nil {
		return nil, fmt.Errorf("list links: %w", err)
	}
	used := map[uint32]bool{}
	for _, m := range msgs {
		if m.Header.Type != unix.RTM_NEWLINK || len(m.Data) < unix.SizeofIfInfomsg {
			continue
		}
		if err := attrs(m.Data[unix.SizeofIfInfomsg:], func(typ uint16, b []byte) {
			if typ == unix.IFLA_GROUP && len(b) == 4 {
				used[binary.NativeEndian.Uint32(b)] = true
			}
		}); err != nil {
			return nil, fmt.Errorf("list links: %w", err)
		}
	}
	return used, nil
}
