package kernel

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/virtnet/virtnet/testrig/testutil"
)

// TestMissingLinkKindNamed: a link type the kernel does not have (as the
// dummy type is on a kernel without CONFIG_DUMMY, which the bridge binding
// needs) fails with an error naming the type and the module to load, and
// still matching EOPNOTSUPP (phase1.IsPermanent: no retry helps).
func TestMissingLinkKindNamed(t *testing.T) {
	ns := testutil.NewNS(t, "vn-kind")
	d, err := Open(ns.Path)
	require.NoError(t, err)
	defer d.Close()
	attrs := netlink.NewLinkAttrs()
	attrs.Name = "nokind0"
	err = d.addLink(&netlink.GenericLink{LinkAttrs: attrs, LinkType: "virtnetnokind"})
	require.ErrorIs(t, err, syscall.EOPNOTSUPP)
	require.ErrorContains(t, err, `add virtnetnokind "nokind0": this kernel has no virtnetnokind link type (load its module on the node: modprobe virtnetnokind)`)
}
