package main

import (
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// pingDoMain is `ping -M do -s SIZE -c COUNT ADDR` for IPv4: echo
// requests of SIZE data bytes from a socket with IP_PMTUDISC_DO, so that
// a packet above the route's MTU is refused by the kernel (EMSGSIZE,
// "message too long") instead of being fragmented. It prints
// "N packets transmitted, M received" and fails unless every echo was
// answered.
func pingDoMain(args []string) error {
	fs := flag.NewFlagSet("ping-do", flag.ContinueOnError)
	size := fs.Int("s", 56, "data bytes")
	count := fs.Int("c", 3, "echo requests")
	wait := fs.Duration("W", 2*time.Second, "wait for each reply")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("ping-do: one IPv4 address")
	}
	dst, err := netip.ParseAddr(fs.Arg(0))
	if err != nil || !dst.Is4() {
		return fmt.Errorf("ping-do: %q is not an IPv4 address", fs.Arg(0))
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_ICMP)
	if err != nil {
		return fmt.Errorf("raw socket: %w", err)
	}
	f := os.NewFile(uintptr(fd), "icmp")
	defer f.Close()
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO); err != nil {
		return fmt.Errorf("IP_MTU_DISCOVER: %w", err)
	}
	tv := unix.NsecToTimeval(wait.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return err
	}
	id := os.Getpid() & 0xffff
	sa := &unix.SockaddrInet4{Addr: dst.As4()}
	got := 0
	buf := make([]byte, 65536)
	for seq := 1; seq <= *count; seq++ {
		m := icmp.Message{Type: ipv4.ICMPTypeEcho, Body: &icmp.Echo{ID: id, Seq: seq, Data: make([]byte, *size)}}
		b, err := m.Marshal(nil)
		if err != nil {
			return err
		}
		if err := unix.Sendto(fd, b, 0, sa); err != nil {
			fmt.Printf("%d packets transmitted, %d received\n", seq-1, got)
			return fmt.Errorf("send %d data bytes to %s with don't fragment: %w", *size, dst, err)
		}
		deadline := time.Now().Add(*wait)
		for time.Now().Before(deadline) {
			n, _, err := unix.Recvfrom(fd, buf, 0)
			if err != nil {
				break
			}
			// A raw IPv4 socket reads the IP header too.
			ihl := int(buf[0]&0x0f) * 4
			if n < ihl {
				continue
			}
			r, err := icmp.ParseMessage(1, buf[ihl:n])
			if err != nil {
				continue
			}
			if e, ok := r.Body.(*icmp.Echo); ok && r.Type == ipv4.ICMPTypeEchoReply && e.ID == id && e.Seq == seq {
				got++
				break
			}
		}
	}
	fmt.Printf("%d packets transmitted, %d received\n", *count, got)
	if got != *count {
		return fmt.Errorf("%d of %d echo requests answered", got, *count)
	}
	return nil
}
