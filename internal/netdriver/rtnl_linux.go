package netdriver

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"

	mdnetlink "github.com/mdlayher/netlink"
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

// rtConn returns the driver's second rtnetlink socket, with the kernel's
// strict checking of dump requests on (so that a dump honours its
// filters), made on the namespace's thread on first use.
func (n *Netlink) rtConn() (*mdnetlink.Conn, error) {
	n.rtMu.Lock()
	defer n.rtMu.Unlock()
	if n.rt != nil {
		return n.rt, nil
	}
	var c *mdnetlink.Conn
	err := n.thr.Do(func() (err error) {
		if c, err = mdnetlink.Dial(unix.NETLINK_ROUTE, nil); err != nil {
			return err
		}
		if err := c.SetOption(mdnetlink.GetStrictCheck, true); err != nil {
			_ = c.Close()
			return fmt.Errorf("strict checking: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("rtnetlink socket in %s: %w", n.nsPath, err)
	}
	n.rt = c
	return c, nil
}

// closeRT closes the second rtnetlink socket, if made.
func (n *Netlink) closeRT() {
	n.rtMu.Lock()
	defer n.rtMu.Unlock()
	if n.rt != nil {
		_ = n.rt.Close()
		n.rt = nil
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
	c, err := n.rtConn()
	if err != nil {
		return false, err
	}
	req := make([]byte, unix.SizeofIfInfomsg)
	req[0] = unix.AF_UNSPEC
	binary.NativeEndian.PutUint32(req[4:8], uint32(idx))
	msgs, err := c.Execute(mdnetlink.Message{Header: mdnetlink.Header{Type: unix.RTM_GETLINK, Flags: mdnetlink.Request}, Data: req})
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
					kind = string(trimNUL(b))
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

func trimNUL(b []byte) []byte {
	for len(b) > 0 && b[len(b)-1] == 0 {
		b = b[:len(b)-1]
	}
	return b
}

// linkAddrs returns the addresses of the link of index idx in family
// (unix.AF_INET or AF_INET6) of universe scope, from a dump the kernel
// filters by link (strict checking). Each address reads as
// vishvananda/netlink reads it: the local address (IFA_LOCAL) as a host
// prefix when it has a peer (IFA_ADDRESS differs, a point-to-point
// address), else IFA_ADDRESS with the prefix length.
func (n *Netlink) linkAddrs(idx int, family int) ([]netip.Prefix, error) {
	c, err := n.rtConn()
	if err != nil {
		return nil, err
	}
	req := make([]byte, unix.SizeofIfAddrmsg)
	req[0] = byte(family)
	binary.NativeEndian.PutUint32(req[4:8], uint32(idx))
	var out []netip.Prefix
	for range dumpRetries {
		msgs, err := c.Execute(mdnetlink.Message{Header: mdnetlink.Header{Type: unix.RTM_GETADDR, Flags: mdnetlink.Request | mdnetlink.Dump}, Data: req})
		if err != nil {
			return nil, err
		}
		out = out[:0]
		interrupted := false
		for _, m := range msgs {
			if m.Header.Flags&mdnetlink.DumpInterrupted != 0 {
				interrupted = true
			}
			if m.Header.Type != unix.RTM_NEWADDR || len(m.Data) < unix.SizeofIfAddrmsg {
				continue
			}
			fam, plen, scope := int(m.Data[0]), int(m.Data[1]), m.Data[3]
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
				}
			}); err != nil {
				return nil, fmt.Errorf("decode address of link %d: %w", idx, err)
			}
			var p netip.Prefix
			switch {
			case local != nil && !(family == unix.AF_INET && addr != nil && net.IP(local).Equal(net.IP(addr))):
				a, ok := netip.AddrFromSlice(local)
				if !ok {
					continue
				}
				p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
			case addr != nil:
				a, ok := netip.AddrFromSlice(addr)
				if !ok {
					continue
				}
				p = netip.PrefixFrom(a.Unmap(), plen)
			default:
				continue
			}
			out = append(out, p)
		}
		if !interrupted {
			return out, nil
		}
	}
	return nil, fmt.Errorf("address dump of link %d: %w", idx, errDumpInterrupted)
}

// errDumpInterrupted reports a dump the kernel interrupted
// dumpRetries times in a row.
var errDumpInterrupted = errors.New("dump interrupted (NLM_F_DUMP_INTR) on every try")
