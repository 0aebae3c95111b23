//go:build linux

package deploy

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"sigs.k8s.io/yaml"

	"github.com/virtnet/virtnet/testrig/testutil"
)

// waitCommand is the command of the binding CNI DaemonSet's long-running
// container.
func waitCommand(t *testing.T) []string {
	var ds struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Name    string   `json:"name"`
						Command []string `json:"command"`
					} `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(cniDaemonSet, &ds))
	require.Len(t, ds.Spec.Template.Spec.Containers, 1)
	c := ds.Spec.Template.Spec.Containers[0]
	require.Equal(t, "wait", c.Name)
	return c.Command
}

// startPID1 starts argv (argv[0] a busybox applet path such as /bin/sh,
// run as the host's busybox applet: the image is busybox) as PID 1 of a
// new PID namespace, as a container's command runs.
func startPID1(t *testing.T, argv []string) *exec.Cmd {
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		testutil.Skip(t, "busybox (Debian's busybox-static), the CNI image's userland")
	}
	applet := argv[0][strings.LastIndex(argv[0], "/")+1:]
	cmd := exec.Command(busybox, append([]string{applet}, argv[1:]...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// caught reports whether pid has a handler for sig (/proc's SigCgt). A
// signal PID 1 of a namespace has no handler for is dropped by the kernel
// (its default action does not apply to a namespace's init).
func caught(t *testing.T, pid int, sig unix.Signal) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "SigCgt:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			require.NoError(t, err)
			return mask&(1<<(uint(sig)-1)) != 0
		}
	}
	t.Fatal("no SigCgt in /proc status")
	return false
}

// hasChild reports whether pid has a child process (/proc's children).
func hasChild(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	return err == nil && len(strings.TrimSpace(string(b))) > 0
}

// TestWaitContainerExitsOnSIGTERM: the binding CNI DaemonSet's
// long-running container, run as a container runs it (PID 1 of its own
// PID namespace, busybox's shell as in the image), has a SIGTERM handler
// and exits 0 when it gets SIGTERM, so that a rollout does not wait out
// the grace period on every node. The old one, a sleep exec'd as PID 1,
// had none: the kernel dropped SIGTERM and only SIGKILL ended it.
func TestWaitContainerExitsOnSIGTERM(t *testing.T) {
	testutil.RequireRoot(t)

	t.Run("old: exec sleep", func(t *testing.T) {
		cmd := startPID1(t, []string{"/bin/sleep", "2147483647"})
		require.Eventually(t, func() bool {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", cmd.Process.Pid))
			return err == nil && strings.Contains(string(b), "sleep\x002147483647") // exec'd
		}, 10*time.Second, 10*time.Millisecond)
		require.False(t, caught(t, cmd.Process.Pid, unix.SIGTERM), "sleep as PID 1 has no SIGTERM handler")
	})

	t.Run("cni-daemonset.yaml", func(t *testing.T) {
		cmd := startPID1(t, waitCommand(t))
		pid := cmd.Process.Pid
		// The trap is set before the sleep starts.
		require.Eventually(t, func() bool { return hasChild(pid) }, 10*time.Second, 10*time.Millisecond, "the shell starts its sleep")
		require.True(t, caught(t, pid, unix.SIGTERM), "the shell has a SIGTERM handler")
		require.NoError(t, cmd.Process.Signal(unix.SIGTERM))
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				t.Fatalf("exited %v after SIGTERM, want 0", exit)
			}
			require.NoError(t, err)
		case <-time.After(30 * time.Second): // a hang guard, not a measure
			t.Fatal("still running 30 s after SIGTERM")
		}
	})
}
