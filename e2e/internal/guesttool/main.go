// Command guesttool is what the e2e guests need beyond busybox, in one
// static binary (/bin/guesttool in their initramfs):
//
//	guesttool dhcp6 [-i eth0] [-t 30s]
//	    lease an IPv6 address by DHCPv6 (busybox has no client), see dhcp6.go
//	guesttool ping-do -s SIZE [-c 3] [-W 2s] ADDR
//	    `ping -M do -s SIZE`: ICMP echo with SIZE data bytes and the
//	    don't-fragment bit, never fragmented locally (busybox's ping has
//	    no -M), see pingdo.go
//	guesttool --version
//	    the version, as every binary of the module says it
package main

import (
	"fmt"
	"os"

	"github.com/virtnet/virtnet/internal/buildinfo"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: guesttool dhcp6|ping-do|--version …")
		os.Exit(2)
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "dhcp6":
		err = dhcp6Main(args)
	case "ping-do":
		err = pingDoMain(args)
	case "--version", "-version":
		fmt.Println(buildinfo.About("guesttool"))
		return
	default:
		err = fmt.Errorf("unknown command %q", cmd)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "guesttool:", err)
		os.Exit(1)
	}
}
