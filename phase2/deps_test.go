package phase2_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNoKernelCodeLinked: phase2 and its packages (what an unprivileged
// virt-launcher imports) link none of phase1's kernel-changing code: not
// the netlink driver, not vishvananda/netlink, not google/nftables. The
// bindings they reach name only the netdriver interface; the DHCP server
// reads addresses and neighbours over jsimonetti/rtnetlink.
func TestNoKernelCodeLinked(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./...").CombinedOutput()
	require.NoError(t, err, "%s", out)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/virtnet/virtnet/netdriver", "the check must see the bindings' interface package")
	for _, dep := range deps {
		for _, banned := range []string{
			"github.com/vishvananda/netlink",
			"github.com/google/nftables",
			"github.com/virtnet/virtnet/netdriver/kernel",
			"github.com/virtnet/virtnet/netdriver/netdrivertest",
			"github.com/virtnet/virtnet/phase1",
		} {
			require.False(t, dep == banned || strings.HasPrefix(dep, banned+"/"), "phase2 links %s", dep)
		}
	}
}
