package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/testrig/testutil"
)

// TestBinary builds the launcher and runs it as a user without
// privileges: it says that root is needed and why, and exits 1; -h exits
// 0 with the usage on stderr.
func TestBinary(t *testing.T) {
	testutil.SkipCoveredUnderRace(t, "its time goes to go build and to a binary built without -race, which the race detector does not see")
	testutil.RequireRoot(t) // to run the binary as another user
	bin := testutil.BuildMain(t, "launcher")
	dir := filepath.Dir(bin)
	vmi := filepath.Join(dir, "vmi.yaml")
	require.NoError(t, os.WriteFile(vmi, []byte(masqueradeVMI), 0o644))

	stdout, stderr, code := testutil.RunAs(t, testutil.Nobody, dir, nil, bin, "-vmi", vmi, "-netns", "pod", "-dir", filepath.Join(dir, "work"))
	require.Equal(t, 1, code, "stderr: %s", stderr)
	require.Contains(t, stderr, "launcher: needs root: phase1 enters the pod's network namespace")
	require.Contains(t, stderr, "CAP_NET_ADMIN")
	require.Empty(t, stdout)

	_, stderr, code = testutil.RunAs(t, testutil.Nobody, dir, nil, bin, "-h")
	require.Equal(t, 0, code, "-h exits 0")
	require.Contains(t, stderr, "Usage of launcher")
}
