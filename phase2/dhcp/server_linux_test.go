package dhcp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
)

// udhcpcScript records the environment of every event and configures the
// address and MTU on "bound", as a distribution's default script would.
const udhcpcScript = `#!/bin/sh
env > "$OUT.$1"
if [ "$1" = bound ]; then
	busybox ifconfig "$interface" "$ip" netmask "$subnet" up
	[ -n "$mtu" ] && busybox ifconfig "$interface" mtu "$mtu"
fi
exit 0
`

func readEnv(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			env[k] = v
		}
	}
	return env
}

// TestUdhcpc runs busybox's udhcpc in a VM namespace against the server
// on the pod's bridge: every option arrives as udhcpc decodes it and the
// address lands on the client's interface; a second client with another
// MAC gets nothing.
func TestUdhcpc(t *testing.T) {
	busybox := needBinary(t, "busybox", "busybox-static")
	vmMAC, otherMAC := "02:42:ac:10:00:18", "02:42:ac:10:00:99"
	l := newLab(t, []string{"169.254.75.10/32"}, vmMAC, otherMAC)

	rec := bridgeRecord()
	rec.Routes = []cache.Route{
		{Dst: netip.MustParsePrefix("0.0.0.0/0"), Gateway: netip.MustParseAddr("10.244.1.1")},
		{Dst: netip.MustParsePrefix("10.244.1.0/24")},
		{Dst: netip.MustParsePrefix("172.16.0.0/12"), Gateway: netip.MustParseAddr("10.244.1.254")},
	}
	vmi := testVMI()
	vmi.Spec.Subdomain = "mysub"
	iface := &api.Interface{Name: "default", Bridge: &struct{}{}, DHCPOptions: &api.DHCPOptions{
		BootFileName: "pxelinux.0", TFTPServerName: "tftp.example.org", NTPServers: []string{"10.0.0.5"},
		PrivateOptions: []api.DHCPPrivateOption{{Option: 240, Value: "extra"}},
	}}
	cfg, err := NewConfig(vmi, iface, rec, []byte(podResolvConf))
	require.NoError(t, err)
	s, err := NewServer(cfg, testLogger(t), WithNetNS(l.pod.Path))
	require.NoError(t, err)
	serve(t, s)

	out := t.TempDir() + "/env"
	script := writeScript(t, udhcpcScript)
	udhcpc := func(outFile string) *exec.Cmd {
		cmd := exec.Command(busybox, "udhcpc", "-i", "eth0", "-s", script, "-f", "-q", "-n",
			"-t", "3", "-T", "1", "-A", "1", "-O", "staticroutes", "-O", "search", "-O", "ntpsrv", "-O", "tftp", "-O", "bootfile", "-O", "240")
		cmd.Env = append(os.Environ(), "OUT="+outFile)
		return cmd
	}
	cmd := udhcpc(out)
	outb := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = outb, outb
	require.NoError(t, run(l.clients[0], cmd), "udhcpc: %s", outb)
	t.Logf("udhcpc: %s", outb)

	env := readEnv(t, out+".bound")
	for k, want := range map[string]string{
		"interface":    "eth0",
		"ip":           "10.244.1.7",
		"subnet":       "255.255.255.0",
		"mask":         "24",
		"router":       "10.244.1.1",
		"dns":          "10.96.0.10",
		"domain":       "mysub.default.svc.cluster.local",
		"search":       "mysub.default.svc.cluster.local default.svc.cluster.local svc.cluster.local cluster.local",
		"mtu":          "1440",
		"staticroutes": "10.244.1.0/24 0.0.0.0 172.16.0.0/12 10.244.1.254 0.0.0.0/0 10.244.1.1",
		"hostname":     "testvmi",
		"lease":        "86313600",
		"serverid":     "169.254.75.10",
		"ntpsrv":       "10.0.0.5",
		"tftp":         "tftp.example.org",
		"bootfile":     "pxelinux.0",
		"opt240":       fmt.Sprintf("%x", "extra"),
	} {
		require.Equal(t, want, env[k], "udhcpc variable %s", k)
	}

	// The address and MTU really landed on the VM's interface.
	eth0, err := l.clients[0].Handle.LinkByName("eth0")
	require.NoError(t, err)
	addrs, err := l.clients[0].Handle.AddrList(eth0, netlink.FAMILY_V4)
	require.NoError(t, err)
	require.Len(t, addrs, 1)
	require.Equal(t, "10.244.1.7/24", addrs[0].IPNet.String())
	require.Equal(t, 1440, eth0.Attrs().MTU)

	// Another MAC on the same bridge gets no offer: udhcpc gives up after
	// its bounded tries.
	out2 := t.TempDir() + "/env"
	cmd = udhcpc(out2)
	outb.Reset()
	cmd.Stdout, cmd.Stderr = outb, outb
	err = run(l.clients[1], cmd)
	var exitErr *exec.ExitError
	require.True(t, errors.As(err, &exitErr), "second client must fail, got %v: %s", err, outb)
	require.NoFileExists(t, out2+".bound")
	require.FileExists(t, out2+".leasefail")
}

// TestServeLifecycle checks that Serve returns when ctx ends and that the
// port is free again afterwards, and that a missing bridge is a BindError
// naming it.
func TestServeLifecycle(t *testing.T) {
	l := newLab(t, []string{"169.254.75.10/32"})
	cfg, err := NewConfig(testVMI(), nil, bridgeRecord(), nil)
	require.NoError(t, err)
	bindPlain := func() error {
		return l.pod.Do(func() error {
			c, err := net.ListenPacket("udp4", "0.0.0.0:67")
			if err != nil {
				return err
			}
			return c.Close()
		})
	}
	for i := range 2 { // twice: the second server binds where the first was
		s, err := NewServer(cfg, testLogger(t), WithNetNS(l.pod.Path))
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Serve(ctx) }()
		<-s.Ready()
		require.Error(t, bindPlain(), "round %d: port 67 must be taken while serving", i)
		cancel()
		require.NoError(t, <-done)
		require.NoError(t, bindPlain(), "round %d: port 67 must be free after Serve returned", i)
		require.Error(t, s.Serve(context.Background()), "Serve twice")
	}

	bad := *cfg
	bad.Bridge = "k6t-nope"
	s, err := NewServer(&bad, testLogger(t), WithNetNS(l.pod.Path))
	require.NoError(t, err)
	err = s.Serve(context.Background())
	var be *BindError
	require.ErrorAs(t, err, &be)
	require.Equal(t, "k6t-nope", be.Interface)
	require.Contains(t, err.Error(), `"k6t-nope"`)
	require.Contains(t, err.Error(), "no such device")
}

// TestUdhcpcMaxMessageSize: busybox udhcpc accepts replies of at most 576
// bytes (its option 57). With a 255-byte private option on top of every
// other option the full reply is far larger; the server leaves the
// private option out (logging it) and udhcpc gets its lease with the rest.
func TestUdhcpcMaxMessageSize(t *testing.T) {
	busybox := needBinary(t, "busybox", "busybox-static")
	vmMAC := "02:42:ac:10:00:18"
	l := newLab(t, []string{"169.254.75.10/32"}, vmMAC)
	rec := bridgeRecord()
	rec.Routes = []cache.Route{{Dst: netip.MustParsePrefix("0.0.0.0/0"), Gateway: netip.MustParseAddr("10.244.1.1")}, {Dst: netip.MustParsePrefix("10.244.1.0/24")}}
	iface := &api.Interface{Name: "default", Bridge: &struct{}{}, DHCPOptions: &api.DHCPOptions{
		BootFileName: "pxelinux.0", TFTPServerName: "tftp.example.org", NTPServers: []string{"10.0.0.5"},
		PrivateOptions: []api.DHCPPrivateOption{{Option: 240, Value: strings.Repeat("v", 255)}},
	}}
	cfg, err := NewConfig(testVMI(), iface, rec, []byte(podResolvConf))
	require.NoError(t, err)
	full := NewHandler4(cfg, nil).reply(discover(t, vmMAC), dhcpv4.MessageTypeOffer, net.IPv4zero)
	full.Options.Update(dhcpv4.OptGeneric(dhcpv4.GenericOptionCode(240), []byte(strings.Repeat("v", 255))))
	require.Greater(t, len(full.ToBytes())+ipUDPHeaders, 576, "the test needs a reply over 576 bytes")

	logs := &lockedBuffer{}
	s, err := NewServer(cfg, slog.New(slog.NewTextHandler(io.MultiWriter(logs, tWriter{t}), nil)), WithNetNS(l.pod.Path))
	require.NoError(t, err)
	serve(t, s)

	out := t.TempDir() + "/env"
	cmd := exec.Command(busybox, "udhcpc", "-i", "eth0", "-s", writeScript(t, udhcpcScript), "-f", "-q", "-n",
		"-t", "5", "-T", "1", "-A", "1", "-O", "staticroutes", "-O", "search", "-O", "ntpsrv", "-O", "tftp", "-O", "bootfile", "-O", "240")
	cmd.Env = append(os.Environ(), "OUT="+out)
	outb := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = outb, outb
	require.NoError(t, run(l.clients[0], cmd), "udhcpc got no lease: %s", outb)
	env := readEnv(t, out+".bound")
	require.Equal(t, "10.244.1.7", env["ip"])
	require.Equal(t, "10.96.0.10", env["dns"])
	require.Equal(t, "pxelinux.0", env["bootfile"])
	require.Equal(t, "10.244.1.0/24 0.0.0.0 0.0.0.0/0 10.244.1.1", env["staticroutes"])
	require.NotContains(t, env, "opt240", "the private option cannot fit")
	require.Contains(t, logs.String(), "options left out to fit the client's maximum message size")
	require.Contains(t, logs.String(), "dropped=[240]")
}

// lockedBuffer is a bytes.Buffer safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
