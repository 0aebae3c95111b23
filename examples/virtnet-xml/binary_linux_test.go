package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/testrig/testutil"
)

// TestUnprivileged builds the example and runs it as a user without
// capabilities: the default NIC type is then type='ethernet' on phase1's
// tap (libvirt could not create the tap of type='bridge'), an explicit
// bridge is refused naming the flag, and -netns says that root is needed
// and why. -h exits 0.
func TestUnprivileged(t *testing.T) {
	testutil.SkipCoveredUnderRace(t, "its time goes to go build and to a binary built without -race, which the race detector does not see")
	testutil.RequireRoot(t) // to run the binary as another user
	bin := testutil.BuildMain(t, "virtnet-xml")
	dir := filepath.Dir(bin)
	nobody := func(args ...string) (string, string, int) {
		return testutil.RunAs(t, testutil.Nobody, dir, []string{"PATH=/usr/bin:/bin", "HOME=" + dir}, bin, args...)
	}

	xml, errOut, code := nobody()
	require.Equal(t, 0, code, errOut)
	var dom libvirtxml.Domain
	require.NoError(t, dom.Unmarshal(xml))
	for _, i := range dom.Devices.Interfaces {
		if i.Source != nil && (i.Source.Bridge != nil || i.Source.Ethernet != nil) {
			require.Nil(t, i.Source.Bridge, "no type='bridge' without CAP_NET_ADMIN")
			require.NotNil(t, i.Target, "type='ethernet' on phase1's tap")
		}
	}
	require.Contains(t, xml, `<interface type="ethernet">`)

	_, errOut, code = nobody("-interface-type", "bridge")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, `virtnet-xml: -interface-type "bridge": libvirt creates the tap of <interface type='bridge'> itself, which needs CAP_NET_ADMIN`)

	_, errOut, code = nobody("-netns", "pod", "-cache", filepath.Join(t.TempDir(), "cache"))
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "-netns needs root: phase1 enters the namespace")

	_, errOut, code = nobody("-h")
	require.Equal(t, 0, code)
	require.Contains(t, errOut, "Usage of virtnet-xml")
}

// TestPhase1ErrorOnce: a failing phase1 is named once ("phase1: open
// namespace: …", not "phase1: phase1: …").
func TestPhase1ErrorOnce(t *testing.T) {
	testutil.RequireRoot(t)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-netns", "virtnet-no-such-ns", "-cache", t.TempDir()}, &stdout, &stderr)
	require.Equal(t, 1, code)
	require.Contains(t, stderr.String(), "virtnet-xml: phase1: open namespace: ")
	require.Equal(t, 1, strings.Count(stderr.String(), "phase1:"), stderr.String())
}
