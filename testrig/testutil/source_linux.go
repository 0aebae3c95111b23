package testutil

import (
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ServeSource listens on addr ("ip:port", port 0 for any) of network
// ("tcp4", "tcp6") inside ns and answers every connection with the
// remote address it saw ("ip:port\n"), until the test ends. It returns
// the address it listens on. Traffic checks use it to see which source
// address a connection came from.
func ServeSource(tb testing.TB, ns *NS, network, addr string) string {
	tb.Helper()
	var ln net.Listener
	require.NoError(tb, ns.Do(func() (err error) { ln, err = net.Listen(network, addr); return err }))
	tb.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			fmt.Fprintf(c, "%s\n", c.RemoteAddr())
			_ = c.Close()
		}
	}()
	return ln.Addr().String()
}

// DialSource connects from inside ns to a [ServeSource] server, with up
// to tries attempts of 2 s each (the first SYN can be lost while
// neighbours are resolved), and returns the source address the server
// saw (without port).
func DialSource(ns *NS, network, addr string, tries int) (string, error) {
	var c net.Conn
	err := ns.Do(func() error {
		var err error
		for range max(tries, 1) {
			if c, err = net.DialTimeout(network, addr, 2*time.Second); err == nil {
				return nil
			}
		}
		return err
	})
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	b, err := io.ReadAll(c)
	if err != nil {
		return "", err
	}
	host, _, err := net.SplitHostPort(strings.TrimSpace(string(b)))
	if err != nil {
		return "", fmt.Errorf("server's answer %q: %w", b, err)
	}
	return host, nil
}
