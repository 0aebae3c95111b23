package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"

	"github.com/virtnet/virtnet/netdriver"

	mdnetlink "github.com/mdlayher/netlink"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Requests that vishvananda/netlink v1.3.1 answers with a dump of the
// whole namespace, filtered in user space, go through a second rtnetlink
// socket instead, asking the kernel for exactly what they need: the
// flags of one bridge port (LinkGetProtinfo dumps every bridge port of
// the namespace) and the addresses of one link (AddrList dumps every
// address). With N interfaces phase1 asks each once per interface, so the
// dumps made its cost grow as N²: at 256 interfaces a Learning call took
// 1.6 ms against 0.25 ms at 64.

// errNotBridgePort is returned for the bridge port flags of a link that is
// not a bridge port.
var errNotBridgePort = errors.New("not a bridge port")

// rtRecvSize is the receive buffer of a reply: a dump's parts are at most
// 32 KiB (NLMSG_GOODSIZE is smaller); a truncated one is an error.
const rtRecvSize = 64 << 10

// rtRequest sends one request on the driver's second rtnetlink socket and
// returns the replies of its sequence number, up to NLMSG_DONE for a dump
// and the first reply otherwise; a kernel error is returned as its errno,
// a dump the kernel marked inconsistent (NLM_F_DUMP_INTR) as
// [netlink.ErrDumpInterrupted], for [retryDump]. The socket is a plain blocking file descriptor
// (made on the namespace's thread on first use, with strict checking of
// dump requests on so that a dump honours its filters): the kernel
// answers within the send, and a netlink library's dial costs 10× more
// than the socket.
func (n *Netlink) rtRequest(typ uint16, dump bool, body []byte) (msgs []syscall.NetlinkMessage, err error) {
	n.rtMu.Lock()
	defer n.rtMu.Unlock()
	if n.rtfd < 0 {
		err := n.thr.Do(func() error {
			fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
			if err != nil {
				return err
			}
			if err := unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_GET_STRICT_CHK, 1); err != nil {
				_ = unix.Close(fd)
				return fmt.Errorf("strict checking: %w", err)
			}
			n.rtfd = fd
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("rtnetlink socket in %s: %w", n.nsPath, err)
		}
	}
	n.rtseq++
	seq := n.rtseq
	flags := uint16(unix.NLM_F_REQUEST)
	if dump {
		flags |= unix.NLM_F_DUMP
	}
	req := make([]byte, unix.NLMSG_HDRLEN+len(body))
	binary.NativeEndian.PutUint32(req[0:4], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:6], typ)
	binary.NativeEndian.PutUint16(req[6:8], flags)
	binary.NativeEndian.PutUint32(req[8:12], seq)
	copy(req[unix.NLMSG_HDRLEN:], body)
	if err := unix.Sendto(n.rtfd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, err
	}
	if n.rtbuf == nil {
		n.rtbuf = make([]byte, rtRecvSize)
	}
	buf := n.rtbuf
	for {
		nr, _, rflags, _, err := unix.Recvmsg(n.rtfd, buf, nil, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if rflags&unix.MSG_TRUNC != 0 {
			return nil, fmt.Errorf("rtnetlink reply larger than %d bytes", rtRecvSize)
		}
		parts, err := syscall.ParseNetlinkMessage(buf[:nr])
		if err != nil {
			return nil, err
		}
		for _, m := range parts {
			if m.Header.Seq != seq {
				continue // a reply to an earlier request
			}
			if m.Header.Flags&unix.NLM_F_DUMP_INTR != 0 {
				err = netlink.ErrDumpInterrupted
			}
			switch m.Header.Type {
			case unix.NLMSG_ERROR, unix.NLMSG_DONE:
				if len(m.Data) >= 4 {
					if e := int32(binary.NativeEndian.Uint32(m.Data[:4])); e < 0 {
						return nil, syscall.Errno(-e)
					}
				}
				return msgs, err
			}
			// Copied: buf is reused by the next read.
			m.Data = append([]byte(nil), m.Data...)
			msgs = append(msgs, m)
			if !dump {
				return msgs, nil
			}
		}
	}
}

// closeRT closes the second rtnetlink socket, if made.
func (n *Netlink) closeRT() {
	n.rtMu.Lock()
	defer n.rtMu.Unlock()
	if n.rtfd >= 0 {
		_ = unix.Close(n.rtfd)
		n.rtfd = -1
	}
}

// attrs decodes the attributes of b; nested ones are decoded again by
// the caller.
func attrs(b []byte, f func(typ uint16, data []byte)) error {
	ad, err := mdnetlink.NewAttributeDecoder(b)
	if err != nil {
		return err
	}
	for ad.Next() {
		f(ad.Type(), ad.Bytes())
	}
	return ad.Err()
}

// portLearning returns the learning flag of the bridge port of index idx,
// from a plain RTM_GETLINK of that link: the kernel adds the port's flags
// as the link's slave data (IFLA_LINKINFO, IFLA_INFO_SLAVE_DATA), the same
// attributes the bridge's port dump gives (br_port_fill_attrs).
func (n *Netlink) portLearning(idx int) (bool, error) {
	req := make([]byte, unix.SizeofIfInfomsg)
	req[0] = unix.AF_UNSPEC
	binary.NativeEndian.PutUint32(req[4:8], uint32(idx))
	msgs, err := n.rtRequest(unix.RTM_GETLINK, false, req)
	if err != nil {
		return false, err
	}
	for _, m := range msgs {
		if m.Header.Type != unix.RTM_NEWLINK || len(m.Data) < unix.SizeofIfInfomsg {
			continue
		}
		var kind string
		var data []byte
		err := attrs(m.Data[unix.SizeofIfInfomsg:], func(typ uint16, b []byte) {
			if typ != unix.IFLA_LINKINFO {
				return
			}
			_ = attrs(b, func(typ uint16, b []byte) {
				switch typ {
				case unix.IFLA_INFO_SLAVE_KIND:
					kind = strings.TrimRight(string(b), "\x00")
				case unix.IFLA_INFO_SLAVE_DATA:
					data = b
				}
			})
		})
		if err != nil {
			return false, fmt.Errorf("decode link %d: %w", idx, err)
		}
		if kind != "bridge" || data == nil {
			return false, errNotBridgePort
		}
		learning, found := false, false
		if err := attrs(data, func(typ uint16, b []byte) {
			if typ == unix.IFLA_BRPORT_LEARNING && len(b) > 0 {
				learning, found = b[0] != 0, true
			}
		}); err != nil {
			return false, fmt.Errorf("decode bridge port %d: %w", idx, err)
		}
		if !found {
			return false, fmt.Errorf("bridge port %d: no learning flag in the kernel's reply", idx)
		}
		return learning, nil
	}
	return false, fmt.Errorf("link %d: no link in the kernel's reply", idx)
}

// linkAddrs returns the addresses of the link of index idx in family
// (unix.AF_INET or AF_INET6) of universe scope with their flags, from a
// dump the kernel filters by link (strict checking). Each address reads as
// vishvananda/netlink reads it: the local address (IFA_LOCAL) as a host
// prefix when it has a peer (IFA_ADDRESS differs, a point-to-point
// address), else IFA_ADDRESS with the prefix length; the flags are
// IFA_FLAGS, or the header's 8 bits when the kernel sends no IFA_FLAGS.
func (n *Netlink) linkAddrs(idx int, family int) ([]netdriver.FlaggedAddr, error) {
	req := make([]byte, unix.SizeofIfAddrmsg)
	req[0] = byte(family)
	binary.NativeEndian.PutUint32(req[4:8], uint32(idx))
	msgs, err := retryDump(func() ([]syscall.NetlinkMessage, error) { return n.rtRequest(unix.RTM_GETADDR, true, req) })
	if err != nil {
		return nil, err
	}
	var out []netdriver.FlaggedAddr
	for _, m := range msgs {
		if m.Header.Type != unix.RTM_NEWADDR || len(m.Data) < unix.SizeofIfAddrmsg {
			continue
		}
		fam, plen, flags, scope := int(m.Data[0]), int(m.Data[1]), uint32(m.Data[2]), m.Data[3]
		if fam != family || int(binary.NativeEndian.Uint32(m.Data[4:8])) != idx || scope != unix.RT_SCOPE_UNIVERSE {
			continue
		}
		var local, addr []byte
		if err := attrs(m.Data[unix.SizeofIfAddrmsg:], func(typ uint16, b []byte) {
			switch typ {
			case unix.IFA_LOCAL:
				local = b
			case unix.IFA_ADDRESS:
				addr = b
			case unix.IFA_FLAGS:
				if len(b) == 4 {
					flags = binary.NativeEndian.Uint32(b)
				}
			}
		}); err != nil {
			return nil, fmt.Errorf("decode address of link %d: %w", idx, err)
		}
		ip, host := addr, false
		if local != nil && !(family == unix.AF_INET && addr != nil && net.IP(local).Equal(net.IP(addr))) {
			ip, host = local, true
		}
		a, ok := netip.AddrFromSlice(ip) // not ok for nil too
		if !ok {
			continue
		}
		a = a.Unmap()
		if host {
			plen = a.BitLen()
		}
		out = append(out, netdriver.FlaggedAddr{Prefix: netip.PrefixFrom(a, plen), Flags: flags})
	}
	return out, nil
}
