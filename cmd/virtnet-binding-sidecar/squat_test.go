//go:build linux

package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/kubevirt/kvplugin/sidecar"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// squatUDP67 is the test binary run as udp67-squatter: a process of the
// pod that binds UDP 0.0.0.0:67 (no device), says so and waits.
func squatUDP67() {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_UDP)
	if err == nil {
		err = unix.Bind(fd, &unix.SockaddrInet4{Port: 67})
	}
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("bound")
	// Not select{}: with no other goroutine, a static binary's runtime
	// calls that a deadlock and exits, and the port with it.
	for {
		time.Sleep(time.Hour)
	}
}

// startSquatter runs the squatter as uid 1000 without capabilities in the
// pod's network namespace (whose ip_unprivileged_port_start the CNI
// lowered to 67 for a non-root VMI) and returns once it is bound.
func startSquatter(t *testing.T, setpriv string, pod *testutil.Pod) {
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	self, err := os.Executable()
	require.NoError(t, err)
	data, err := os.ReadFile(self)
	require.NoError(t, err)
	bin := filepath.Join(dir, "udp67-squatter")
	require.NoError(t, os.WriteFile(bin, data, 0o755))
	cmd := exec.Command(setpriv, "--reuid=1000", "--regid=1000", "--clear-groups",
		"--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--", bin)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, pod.Pod.Do(cmd.Start))
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "bound\n", line)
}

// TestDHCPPortSquatNamed: a process of the pod (uid 1000, no capability)
// that binds UDP 67 before the sidecar serves DHCP would get the VM's
// DHCP, or keep the VM without it. The sidecar cannot share the port (its
// socket is exclusive); OnDefineDomain fails, and its error says that the
// port is taken by another socket of the pod, whose owner (uid) and
// address it names, so that the VM does not start without DHCP unnoticed.
func TestDHCPPortSquatNamed(t *testing.T) {
	testutil.RequireRoot(t)
	setpriv := needBinary(t, "setpriv")
	pod := testutil.NewPod(t)
	prepare(t, pod, api.BindingMasquerade)
	startSquatter(t, setpriv, pod)
	c, _, _ := inProcess(t, pod, sidecar.Config{})
	domain, vmiJSON := masqueradeInputs(t)
	_, err := c.define(domain, vmiJSON)
	require.Error(t, err)
	t.Log(err)
	for _, want := range []string{"UDP port 67", "uid 1000", "0.0.0.0:67", "another socket"} {
		require.True(t, strings.Contains(err.Error(), want), "%q in %v", want, err)
	}
}
