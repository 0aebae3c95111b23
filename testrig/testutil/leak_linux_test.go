package testutil

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// envLeakHelper makes TestLeakHelper, in a process of its own, the helper
// of TestNewNSLeavesNothing.
const envLeakHelper = "VIRTNET_TESTUTIL_LEAK_HELPER"

// TestLeakHelper is the helper TestNewNSLeavesNothing runs (in its own
// process): it makes a namespace, starts a process in it and fails. Run
// alone, it does nothing.
func TestLeakHelper(t *testing.T) {
	if os.Getenv(envLeakHelper) != "1" {
		return
	}
	ns := NewNS(t, "vn-leak")
	cmd := exec.Command("sleep", "600")
	require.NoError(t, ns.Do(cmd.Start))
	netNS, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", cmd.Process.Pid))
	require.NoError(t, err)
	fmt.Printf("NS %s PID %d NET %s\n", ns.Name, cmd.Process.Pid, netNS)
	t.Fatal("this test fails on purpose, with its namespace and process")
}

// TestNewNSLeavesNothing: a test that made a namespace with NewNS and
// started a process in it, then failed, leaves neither behind: the
// process is killed, the namespace's name and mount removed; and
// scripts/leakcheck.sh finds nothing new of the helper's. The suite runs
// packages side by side (an e2e guest's qemu may start in the meantime),
// so a new leftover counts when it names the helper's namespace, its
// process or its namespace inode; any other is logged.
func TestNewNSLeavesNothing(t *testing.T) {
	RequireRoot(t)
	if _, err := exec.LookPath("sleep"); err != nil {
		Skip(t, "no sleep program")
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	script := filepath.Join(root, "scripts", "leakcheck.sh")
	before := filepath.Join(t.TempDir(), "before")
	out, err := exec.Command(script, "--save", before).CombinedOutput()
	require.NoError(t, err, "%s", out)

	cmd := exec.Command(os.Args[0], "-test.run=^TestLeakHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), envLeakHelper+"=1")
	out, err = cmd.CombinedOutput()
	require.Error(t, err, "the helper test fails: %s", out)
	var name, netNS string
	var pid int
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "NS ") {
			_, err := fmt.Sscanf(sc.Text(), "NS %s PID %d NET %s", &name, &pid, &netNS)
			require.NoError(t, err)
		}
	}
	require.NotEmpty(t, name, "helper output: %s", out)
	require.NoFileExists(t, "/var/run/netns/"+name)
	require.False(t, running(pid), "the process started in the namespace is gone")
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	require.NotContains(t, string(mounts), name)
	out, err = exec.Command(script, "--since", before).CombinedOutput()
	if err == nil {
		return
	}
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "leakcheck: %s", out)
	ours := helperLeftovers(string(out), name, pid, netNS)
	require.Empty(t, ours, "leakcheck found the helper's leftovers: %s", out)
	t.Logf("leakcheck found other tests' things (packages run side by side): %s", out)
}

// helperLeftovers returns the lines of leakcheck's report that name the
// helper's namespace, its process or its namespace inode.
func helperLeftovers(report, name string, pid int, netNS string) []string {
	var ours []string
	for _, line := range strings.Split(report, "\n") {
		f := strings.Fields(line)
		switch {
		case strings.Contains(line, name), strings.Contains(line, netNS):
			ours = append(ours, line)
		case len(f) >= 2 && f[0] == "process" && f[1] == strconv.Itoa(pid):
			ours = append(ours, line)
		}
	}
	return ours
}

// running reports whether pid is a live process (not gone, not a zombie
// waiting for its new parent to reap it).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, after, ok := strings.Cut(string(b), ") ")
	return ok && !strings.HasPrefix(after, "Z") && !strings.HasPrefix(after, "X")
}
