package dhcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/dhcpv6"
	"github.com/insomniacslk/dhcp/iana"
	"github.com/stretchr/testify/require"
	"github.com/virtnet/virtnet/cache"
	"github.com/vishvananda/netlink"
)

// TestLogFlood: a client on the bridge floods the server with forged
// REQUESTs carrying the VM's MAC (each gets a NAK), DISCOVERs from
// thousands of foreign MACs and DHCPv6 Solicits from thousands of foreign
// DUIDs. Every packet is answered or ignored as before, but each log
// message costs at most its burst, and the suppressed lines are counted
// when the server stops.
func TestLogFlood(t *testing.T) {
	vmMAC := "52:54:00:12:34:56"
	l := newLab(t, []string{"10.0.2.1/24", "fd10:0:2::1/120"}, vmMAC)
	attacker := l.clients[0]
	linkLocal(t, l.pod, l.bridge)
	src := linkLocal(t, attacker, "eth0")
	eth0, err := attacker.Handle.LinkByName("eth0")
	require.NoError(t, err)
	addr, err := netlink.ParseAddr("10.0.2.50/24")
	require.NoError(t, err)
	require.NoError(t, attacker.Handle.AddrAdd(eth0, addr))

	rec := masqRecord()
	rec.MAC = cache.MustParseMAC(vmMAC)
	cfg, err := NewConfig(testVMI(), nil, rec, nil)
	require.NoError(t, err)
	const burst = 5
	logs := &lockedBuffer{}
	s, err := NewServer(cfg, slog.New(slog.NewTextHandler(logs, nil)), WithNetNS(l.pod.Path),
		withLogLimit(burst, time.Hour))
	require.NoError(t, err)
	stop := serveStoppable(t, s)

	const n = 2000
	var naks, resent int
	zone6 := zone(t, attacker, "eth0")
	require.NoError(t, attacker.Do(func() error {
		c, err := net.ListenPacket("udp4", "0.0.0.0:68")
		if err != nil {
			return err
		}
		defer c.Close()
		hw, _ := net.ParseMAC(vmMAC)
		server := &net.UDPAddr{IP: net.ParseIP("10.0.2.1"), Port: 67}
		buf := make([]byte, 1500)
		for i := range n {
			req, err := dhcpv4.New(dhcpv4.WithHwAddr(hw), dhcpv4.WithMessageType(dhcpv4.MessageTypeRequest),
				dhcpv4.WithOption(dhcpv4.OptRequestedIPAddress(net.IPv4(10, 0, 2, byte(100+i%100)))))
			if err != nil {
				return err
			}
			// A DISCOVER from a foreign MAC: no reply, one log line at most.
			d, err := dhcpv4.NewDiscovery(net.HardwareAddr{2, 0, 0, byte(i >> 16), byte(i >> 8), byte(i)})
			if err != nil {
				return err
			}
			// Wait for the NAK: every request is handled. A client
			// retransmits after a silence; so does this one, a bounded
			// number of times (a loaded machine may be slow to answer).
			const tries = 5
			got := false
			for try := 0; try < tries && !got; try++ {
				if try > 0 {
					resent++
				}
				if _, err := c.WriteTo(req.ToBytes(), server); err != nil {
					return err
				}
				if _, err := c.WriteTo(d.ToBytes(), server); err != nil {
					return err
				}
				for !got {
					_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
					m, _, err := c.ReadFrom(buf)
					if errors.Is(err, os.ErrDeadlineExceeded) {
						break
					}
					if err != nil {
						return err
					}
					r, err := dhcpv4.FromBytes(buf[:m])
					got = err == nil && r.TransactionID == req.TransactionID && r.MessageType() == dhcpv4.MessageTypeNak
				}
			}
			if !got {
				return fmt.Errorf("request %d: no NAK after %d transmissions", i, tries)
			}
			naks++
		}
		c6, err := net.ListenPacket("udp6", "["+src.String()+"%"+zone6+"]:546")
		if err != nil {
			return err
		}
		defer c6.Close()
		servers := &net.UDPAddr{IP: net.ParseIP("ff02::1:2"), Port: 547, Zone: zone6}
		for i := range n {
			duid := &dhcpv6.DUIDLL{HWType: iana.HWTypeEthernet, LinkLayerAddr: net.HardwareAddr{2, 9, 0, byte(i >> 16), byte(i >> 8), byte(i)}}
			sol, err := dhcpv6.NewSolicit(duid.LinkLayerAddr, dhcpv6.WithClientID(duid))
			if err != nil {
				return err
			}
			if _, err := c6.WriteTo(sol.ToBytes(), servers); err != nil {
				return err
			}
			if i%100 == 99 {
				time.Sleep(10 * time.Millisecond) // stay under the in-flight bound
			}
		}
		return nil
	}))
	require.Equal(t, n, naks)
	t.Logf("%d requests answered, %d retransmitted", naks, resent)
	stop()

	out := logs.String()
	t.Logf("%d log lines:\n%s", strings.Count(out, "\n"), out)
	require.Equal(t, burst, strings.Count(out, `msg="dhcp: NAK: requested address is not the VM's"`))
	require.Equal(t, burst, strings.Count(out, `msg="dhcp: ignoring client that is not the VM"`))
	require.LessOrEqual(t, strings.Count(out, `msg="dhcpv6: ignoring client that is not the VM"`), burst)
	require.Contains(t, out, "log lines suppressed by the rate limit")
	// Every request NAKed once (a retransmitted one perhaps twice) and
	// all but the burst suppressed.
	m := regexp.MustCompile(`"lines.dhcp: NAK: requested address is not the VM's"=(\d+)`).FindStringSubmatch(out)
	require.Len(t, m, 2, "the suppressed NAK lines are counted")
	suppressed, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	require.GreaterOrEqual(t, suppressed, n-burst)
	require.LessOrEqual(t, suppressed, n+resent-burst)
	require.Less(t, strings.Count(out, "\n"), 40)
}

// serveStoppable is serve with a function that stops the server and waits
// for Serve to return (also called when the test ends).
func serveStoppable(t *testing.T, s *Server) func() {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	var stopped bool
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		require.NoError(t, <-done)
	}
	t.Cleanup(stop)
	select {
	case <-s.Ready():
	case err := <-done:
		stopped = true
		require.NoError(t, err)
		require.Fail(t, "Serve returned before it was ready")
	}
	return stop
}
