package testutil

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
	fmt.Printf("NS %s PID %d\n", ns.Name, cmd.Process.Pid)
	t.Fatal("this test fails on purpose, with its namespace and process")
}

// TestNewNSLeavesNothing: a test that made a namespace with NewNS and
// started a process in it, then failed, leaves neither behind: the
// process is killed, the namespace's name and mount removed; and
// scripts/leakcheck.sh finds nothing new.
func TestNewNSLeavesNothing(t *testing.T) {
	RequireRoot(t)
	if _, err := exec.LookPath("sleep"); err != nil {
		Skip(t, "no sleep program")
	}
	root, err := filepath.Abs("../../..")
	require.NoError(t, err)
	script := filepath.Join(root, "scripts", "leakcheck.sh")
	before := filepath.Join(t.TempDir(), "before")
	out, err := exec.Command(script, "--save", before).CombinedOutput()
	require.NoError(t, err, "%s", out)

	cmd := exec.Command(os.Args[0], "-test.run=^TestLeakHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), envLeakHelper+"=1")
	out, err = cmd.CombinedOutput()
	require.Error(t, err, "the helper test fails: %s", out)
	var name string
	var pid int
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "NS ") {
			_, err := fmt.Sscanf(sc.Text(), "NS %s PID %d", &name, &pid)
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
	require.NoError(t, err, "leakcheck: %s", out)
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
