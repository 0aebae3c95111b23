package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// cpio writes a "newc" archive, the format the kernel unpacks into its
// initial root file system.
type cpio struct {
	w   *bufio.Writer
	ino int
	off int64
	err error
}

func (c *cpio) write(p []byte) {
	if c.err != nil {
		return
	}
	n, err := c.w.Write(p)
	c.off += int64(n)
	c.err = err
}

func (c *cpio) entry(name string, mode uint32, data []byte, major, minor uint32) {
	nlink := 1
	if mode&0o170000 == 0o040000 {
		nlink = 2
	}
	c.write(fmt.Appendf(nil, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.ino, mode, 0, 0, nlink, 0, len(data), 0, 0, major, minor, len(name)+1, 0))
	c.ino++
	c.write([]byte(name + "\x00"))
	c.pad()
	c.write(data)
	c.pad()
}

func (c *cpio) pad() {
	if r := c.off % 4; r != 0 {
		c.write(make([]byte, 4-r))
	}
}

// guestFiles is the content of the initramfs beside busybox.
type guestFiles struct {
	busybox string            // host path of a static busybox
	modules []string          // host paths of .ko files, in load order
	files   map[string]string // guest path (no leading /) → content, mode 0755
}

// writeInitramfs writes the guest's initramfs to path.
func writeInitramfs(path string, g guestFiles) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	c := &cpio{w: bufio.NewWriter(f), ino: 1}
	for _, d := range []string{"bin", "dev", "etc", "lib", "lib/modules", "mnt", "mnt/ci", "proc", "root", "run", "sys", "tmp", "var"} {
		c.entry(d, 0o040755, nil, 0, 0)
	}
	c.entry("dev/console", 0o020600, nil, 5, 1)
	for _, src := range append([]string{g.busybox}, g.modules...) {
		b, err := os.ReadFile(src)
		if err != nil {
			_ = f.Close()
			return err
		}
		name := "bin/busybox"
		if strings.HasSuffix(src, ".ko") {
			name = "lib/modules/" + filepath.Base(src)
		}
		c.entry(name, 0o100755, b, 0, 0)
	}
	// Every applet is a link in the archive, where busybox --install
	// in /init made them at boot: 400 symlink calls took 10-12 s of a
	// nested guest's boot (the init's first line to its second).
	applets, err := busyboxApplets(g.busybox)
	if err != nil {
		_ = f.Close()
		return err
	}
	for _, a := range applets {
		c.entry("bin/"+a, 0o120777, []byte("busybox"), 0, 0)
	}
	for name, content := range g.files {
		c.entry(name, 0o100755, []byte(content), 0, 0)
	}
	c.entry("TRAILER!!!", 0, nil, 0, 0)
	if c.err == nil {
		c.err = c.w.Flush()
	}
	if err := f.Close(); c.err == nil {
		c.err = err
	}
	return c.err
}

// busyboxApplets lists the applets the busybox at path has (busybox
// --list: the guest's busybox is a static build for this machine), sh
// always among them.
func busyboxApplets(path string) ([]string, error) {
	out, err := exec.Command(path, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list: %w", path, err)
	}
	applets := []string{"sh"}
	for _, a := range strings.Fields(string(out)) {
		if a == "busybox" || a == "sh" || strings.ContainsAny(a, "/.") {
			continue
		}
		applets = append(applets, a)
	}
	return applets, nil
}

// Marker starts every line the guest reports on its console.
const marker = "VIRTNET-E2E"

// guestScript configures the guest's /init.
type guestScript struct {
	modules []string // host paths of the .ko files, in load order
	ping    string   // an address to ping after the lease
	node    string   // "ip:port" of the node's server, which answers with the source it saw
	peer    string   // "ip:port" of a second pod's server, "" for none
	nocloud bool     // read the hostname from the NoCloud image and run its user-data
	ipv6    bool     // wait for an IPv6 default route from router advertisements and report it
	extra   []string // shell lines run once the guest listens
	// dhcp6: lease an IPv6 address with /bin/guesttool (DHCPv6, IA_NA) and
	// add it as a /128, wait for the default route from router
	// advertisements, report address, routes and MTU, ping node6's
	// address and connect to node6 (and peer6) over IPv6.
	dhcp6        bool
	node6, peer6 string // "[ip]:port" of the node's (the second pod's) IPv6 server
	v6only       bool   // no DHCPv4 (an IPv6-only pod): the lease is the DHCPv6 one
	// mtuProbe: after the ping, `ping -M do` (guesttool ping-do) to ping
	// with 1372 and 1373 data bytes, and a listener on port 9000 that
	// reports how many bytes one connection brought ("bulk").
	mtuProbe bool
	// passt: the guest is behind Debian 12's passt (2023-03-09), whose
	// TCP has two faults the guest's tools step around (see
	// docs/bridge-ipv6-and-mtu.md): its connection to the node keeps its
	// write side open until the node closes (passt drops its own FIN when
	// the guest's FIN comes before the guest acknowledged passt's last
	// data), and ports 22 and 8080 read the client's request line before
	// answering (passt does not acknowledge the guest's SYN-ACK before the
	// client's first data, so a client waiting for the server to speak
	// first hangs).
	passt bool
	// bulk: "ip:port" of a node server that sends a block of bytes and
	// closes; the guest reports how many arrived ("bulk-in"), "" for none.
	bulk string
}

// guestInit is the guest's /init: load the modules, take a lease with
// udhcpc (asking for the MTU, search domains and classless static routes),
// report the address, routes and MTU it ended with, read the hostname from
// the NoCloud image and run its user-data (nocloud), ping, connect to the
// node's server (and the peer's) and report what it answered, then serve
// forever: port 8080 answers "hello from <hostname> ip=<address>", port
// 8081 runs a fresh DHCP request for the current address and answers with
// the server's reply (the lease survives phase1 being re-run). Each result
// is one console line "VIRTNET-E2E <what> <details> t=<uptime>".
func guestInit(g guestScript) string {
	var b strings.Builder
	w := func(s string) { io.WriteString(&b, s+"\n") }
	w("#!/bin/busybox sh")
	w("export PATH=/bin")
	w("mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs devtmpfs /dev; mount -t tmpfs tmpfs /tmp")
	w("m() { read -r u _ </proc/uptime; echo \"" + marker + " $* t=$u\" >/dev/console; }")
	w("m init")
	if g.passt {
		w("mkfifo /tmp/hold")
	}
	for _, mod := range g.modules {
		name := filepath.Base(mod)
		w("insmod /lib/modules/" + name + " || m insmod-failed " + name)
	}
	w("m modules")
	if g.ipv6 || g.dhcp6 {
		// Router solicitations at once and every second until answered
		// (the kernel's defaults: up to 1 s, then every 4 s), so that the
		// guest's default route comes with the first advertisement the
		// server can send rather than at the next solicitation.
		w("echo 0 >/proc/sys/net/ipv6/conf/eth0/router_solicitation_delay; echo 1 >/proc/sys/net/ipv6/conf/eth0/router_solicitation_interval")
	}
	w("ip link set lo up; ip link set eth0 up")
	if g.v6only {
		w("m lease-skipped ipv6-only")
	} else {
		w("udhcpc -i eth0 -f -q -n -t 20 -T 1 -O mtu -O search -O staticroutes -s /udhcpc.script >/tmp/udhcpc.log 2>&1 || { m lease-failed; cat /tmp/udhcpc.log >/dev/console; }")
		w("m addr $(ip -4 -o addr show dev eth0 | awk '{print $4}') mtu=$(cat /sys/class/net/eth0/mtu)")
		w("m routes $(ip -4 route show | tr '\\n' ';')")
	}
	w("m resolv $(tr '\\n' ';' </etc/resolv.conf)")
	if g.dhcp6 {
		host6, port6, _ := net.SplitHostPort(g.node6)
		w("if out=$(guesttool dhcp6 -i eth0 2>/tmp/dhcp6c.err); then ip6=${out#address=}; ip6=${ip6%% *}; ip -6 addr add \"$ip6/128\" dev eth0; m lease6 $out; else m lease6-failed $(cat /tmp/dhcp6c.err); fi")
		w("i=0; while [ $i -lt 100 ] && ip -6 addr show dev eth0 | grep -q tentative; do sleep 0.1; i=$((i+1)); done")
		w("i=0; while [ $i -lt 200 ] && ! ip -6 route show default | grep -q .; do sleep 0.1; i=$((i+1)); done")
		w("m addr6 $(ip -6 -o addr show dev eth0 scope global | awk '{print $4}') mtu=$(cat /sys/class/net/eth0/mtu)")
		w("m routes6 $(ip -6 route show | grep -v -e '^fe80' -e '^multicast' -e '^local' -e '^anycast' | tr '\\n' ';')")
		w("if ping6 -A -c 3 -W 2 " + host6 + " >/tmp/ping6.out 2>&1; then m ping6-ok $(grep -E 'packets transmitted' /tmp/ping6.out); else m ping6-failed $(tail -n 2 /tmp/ping6.out); fi")
		w("src=$(" + g.connect(host6, port6) + ")")
		w("m source6 ${src:-none}")
		if g.peer6 != "" {
			h, p, _ := net.SplitHostPort(g.peer6)
			w("src=$(" + g.connect(h, p) + ")")
			w("m peer6 ${src:-none}")
		}
	}
	if g.ipv6 {
		// Router advertisements: the server answers solicitations once the
		// bridge's link-local address exists, which needs the tap's
		// carrier, that is, QEMU; the guest solicits again every second.
		w("i=0; while [ $i -lt 200 ] && ! ip -6 route show default | grep -q .; do sleep 0.1; i=$((i+1)); done")
		w("m routes6 $(ip -6 route show default | tr '\\n' ';')")
	}
	if g.nocloud {
		w("for d in /dev/vd? /dev/sr?; do [ -b \"$d\" ] || continue; mount -t iso9660 -o ro \"$d\" /mnt/ci 2>/dev/null || continue; [ -f /mnt/ci/meta-data ] && break; umount /mnt/ci; done")
		w("if [ -f /mnt/ci/meta-data ]; then")
		w("  h=$(sed -n 's/.*\"local-hostname\":\"\\([^\"]*\\)\".*/\\1/p' /mnt/ci/meta-data)")
		w("  hostname \"$h\"; m hostname $(hostname) from $d")
		w("  sh /mnt/ci/user-data >/tmp/ud.out 2>&1; m userdata $(cat /tmp/ud.out)")
		w("else m hostname-failed no-nocloud-image; fi")
	}
	if !g.v6only {
		w("if ping -A -c 3 -W 2 " + g.ping + " >/tmp/ping.out 2>&1; then m ping-ok $(grep -E 'packets transmitted' /tmp/ping.out); else m ping-failed $(tail -n 2 /tmp/ping.out); fi")
		h, p, _ := net.SplitHostPort(g.node)
		w("src=$(" + g.connect(h, p) + ")")
		w("m source ${src:-none}")
		if g.peer != "" {
			h, p, _ := net.SplitHostPort(g.peer)
			w("src=$(" + g.connect(h, p) + ")")
			w("m peer ${src:-none}")
		}
	}
	if g.bulk != "" {
		h, p, _ := net.SplitHostPort(g.bulk)
		w("m bulk-in $(" + g.connect(h, p) + " | wc -c)")
	}
	if g.mtuProbe {
		for _, n := range []string{"1372", "1373"} {
			w("if guesttool ping-do -s " + n + " -c 3 " + g.ping + " >/tmp/pingdo.out 2>&1; then m pingdo-" + n + " ok $(tr '\\n' ' ' </tmp/pingdo.out); else m pingdo-" + n + " failed $(tr '\\n' ' ' </tmp/pingdo.out); fi")
		}
		w("(nc -l -p 9000 </dev/null | wc -c >/tmp/bulk; m bulk $(cat /tmp/bulk)) &")
	}
	ports := []string{"8080", "8081"}
	if g.passt {
		w("nc -ll -p 22 -e /hello-request.sh &")
		w("nc -ll -p 8080 -e /hello-request.sh &")
		ports = append(ports, "22")
	} else {
		w("nc -ll -p 8080 -e /hello.sh &")
	}
	w("nc -ll -p 8081 -e /renew.sh &")
	// "listening" once the kernel has every listener (netstat reads
	// /proc/net/tcp and tcp6), not after a guessed pause.
	for _, p := range ports {
		w("i=0; while [ $i -lt 100 ] && ! netstat -ltn | grep -q ':" + p + " '; do sleep 0.05; i=$((i+1)); done")
	}
	w("m listening 8080 8081")
	for _, l := range g.extra {
		w(l)
	}
	w("while true; do sleep 3600; done")
	return b.String()
}

// connect is the guest's command that connects to host:port and prints
// what the server sent until it closed. nc half-closes at the end of its
// input, at once with </dev/null; behind passt its input is a FIFO opened
// read-write, which never ends, so that nc ends at the server's FIN only
// (see guestScript.passt), bounded by timeout.
func (g guestScript) connect(host, port string) string {
	if g.passt {
		return "timeout 10 nc " + host + " " + port + " <>/tmp/hold"
	}
	return "nc -w 5 " + host + " " + port + " </dev/null"
}

// guestFilesFor returns the scripts of the initramfs besides busybox and
// the modules; with g.dhcp6 or g.mtuProbe, tool is guesttool's binary.
func guestFilesFor(g guestScript, tool []byte) map[string]string {
	files := map[string]string{
		"init":          guestInit(g),
		"udhcpc.script": udhcpcScript,
		"renew.script":  renewScript,
		"hello.sh":      "#!/bin/sh\necho \"hello from $(hostname) ip=$(ip -4 -o addr show dev eth0 | awk '{print $4}')\"\n",
		// hello-request.sh answers as hello.sh does once it read the
		// client's request line, which it repeats.
		"hello-request.sh": "#!/bin/sh\nread -r req\necho \"hello from $(hostname) ip=$(ip -4 -o addr show dev eth0 | awk '{print $4}') request=$req\"\n",
		"renew.sh":         "#!/bin/sh\nip=$(ip -4 -o addr show dev eth0 | awk '{print $4}'); ip=${ip%/*}\nudhcpc -i eth0 -f -q -n -t 5 -T 2 -O mtu -O search -O staticroutes -r \"$ip\" -s /renew.script 2>/dev/null || echo renew-failed\n",
	}
	if g.dhcp6 || g.mtuProbe {
		files["bin/guesttool"] = string(tool)
	}
	return files
}

// udhcpcScript configures eth0 from the lease and reports it. Classless
// static routes (option 121) replace the router option, as RFC 3442 asks;
// the on-link ones (gateway 0.0.0.0) go first, so that a gateway reached
// through one (Calico's 169.254.1.1) is routable when its route is added.
const udhcpcScript = `#!/bin/sh
case "$1" in
bound|renew)
	[ -n "$mtu" ] && ip link set "$interface" mtu "$mtu"
	ip addr add "$ip/$mask" dev "$interface"
	if [ -n "$staticroutes" ]; then
		set -- $staticroutes
		while [ $# -ge 2 ]; do [ "$2" = 0.0.0.0 ] && ip route add "$1" dev "$interface"; shift 2; done
		set -- $staticroutes
		while [ $# -ge 2 ]; do [ "$2" != 0.0.0.0 ] && ip route add "$1" via "$2" dev "$interface"; shift 2; done
	else
		for r in $router; do ip route add default via "$r" dev "$interface"; break; done
	fi
	[ -n "$hostname" ] && hostname "$hostname"
	: >/etc/resolv.conf
	[ -n "$search" ] && echo "search $search" >>/etc/resolv.conf
	for d in $dns; do echo "nameserver $d" >>/etc/resolv.conf; done
	read -r u _ </proc/uptime
	echo "` + marker + ` lease ip=$ip mask=$mask router=$router staticroutes=$staticroutes dns=$dns domain=$domain search=$search hostname=$hostname mtu=$mtu lease=$lease serverid=$serverid t=$u" >/dev/console
	;;
esac
exit 0
`

// renewScript reports a fresh lease on stdout (the connection) and
// changes nothing.
const renewScript = `#!/bin/sh
case "$1" in
bound|renew) echo "renew ip=$ip mask=$mask router=$router staticroutes=$staticroutes mtu=$mtu lease=$lease" ;;
esac
exit 0
`
