// Command dhcp6c is the e2e guests' DHCPv6 client (busybox has none): it
// solicits an address on one interface with rapid commit, once its
// link-local address is usable, and prints one line
//
//	address=<address> dns=<a,b,…> search=<d1 d2 …>
//
// leaving the address for the caller to add. It exits non-zero when no
// reply came within the timeout.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv6"
	"github.com/insomniacslk/dhcp/dhcpv6/nclient6"
)

func main() {
	iface := flag.String("i", "eth0", "interface")
	timeout := flag.Duration("t", 30*time.Second, "give up after")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := run(ctx, *iface); err != nil {
		fmt.Fprintln(os.Stderr, "dhcp6c:", err)
		os.Exit(1)
	}
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
	for {
		r, err := c.RapidSolicit(ctx)
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
