package main

// guesttool dhcp6 solicits an address on one interface with rapid commit,
// once its link-local address is usable, and prints one line
//
//	address=<address> dns=<a,b,…> search=<d1 d2 …>
//
// leaving the address for the caller to add. It fails when no reply came
// within the timeout.

import (
	"context"
	"flag"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv6"
	"github.com/insomniacslk/dhcp/dhcpv6/nclient6"
	"github.com/insomniacslk/dhcp/iana"
)

func dhcp6Main(args []string) error {
	fs := flag.NewFlagSet("dhcp6", flag.ContinueOnError)
	iface := fs.String("i", "eth0", "interface")
	timeout := fs.Duration("t", 30*time.Second, "give up after")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	return run(ctx, *iface)
}

func run(ctx context.Context, iface string) error {
	var (
		c   *nclient6.Client
		err error
	)
	// The socket binds to the link-local address, which is tentative
	// for a second after the link comes up.
	for c == nil {
		if c, err = nclient6.New(iface, nclient6.WithTimeout(2*time.Second), nclient6.WithRetry(3)); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("client on %s: %w", iface, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	defer c.Close()
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return err
	}
	for {
		r, err := c.SendAndRead(ctx, c.RemoteAddr(), solicit(ifi.HardwareAddr), nclient6.IsMessageType(dhcpv6.MessageTypeReply, dhcpv6.MessageTypeAdvertise))
		if err == nil {
			return report(r)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("solicit: %w", err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// solicit is a Solicit with rapid commit asking for an address (IA_NA)
// (a server that does not commit rapidly answers with an Advertise, whose
// address is taken as it is: the guests only need to know it)
// and the DNS options. Its transaction ID comes from the clock: the
// library's own comes from crypto/rand, which blocks until the kernel's
// random generator is seeded, and a guest under TCG without a hardware
// random source waits minutes for that.
func solicit(mac net.HardwareAddr) *dhcpv6.Message {
	m := &dhcpv6.Message{MessageType: dhcpv6.MessageTypeSolicit}
	ns := time.Now().UnixNano()
	m.TransactionID = dhcpv6.TransactionID{byte(ns >> 16), byte(ns >> 8), byte(ns)}
	dhcpv6.WithClientID(&dhcpv6.DUIDLL{HWType: iana.HWTypeEthernet, LinkLayerAddr: mac})(m)
	m.AddOption(dhcpv6.OptElapsedTime(0))
	dhcpv6.WithIAID([4]byte{0, 0, 0, 1})(m)
	dhcpv6.WithRapidCommit(m)
	dhcpv6.WithRequestedOptions(dhcpv6.OptionDNSRecursiveNameServer, dhcpv6.OptionDomainSearchList)(m)
	return m
}

func report(r *dhcpv6.Message) error {
	ia := r.Options.OneIANA()
	if ia == nil {
		return fmt.Errorf("reply without IA_NA: %s", r.Summary())
	}
	a := ia.Options.OneAddress()
	if a == nil {
		return fmt.Errorf("IA_NA without an address: %s", r.Summary())
	}
	var dns []string
	for _, d := range r.Options.DNS() {
		dns = append(dns, d.String())
	}
	var search []string
	if l := r.Options.DomainSearchList(); l != nil {
		search = l.Labels
	}
	fmt.Printf("address=%s dns=%s search=%s\n", net.IP(a.IPv6Addr), strings.Join(dns, ","), strings.Join(search, " "))
	return nil
}
