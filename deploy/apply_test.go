package deploy

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestApplyCommandsOwnTheirFields: every `kubectl apply --server-side` of a
// deploy/ directory that the repository tells a user to run names virtnet's
// own field manager. Server-side apply removes the fields its manager owned
// and no longer names: under the default manager ("kubectl"), applying
// deploy/sidecars to a KubeVirt CR that was itself applied server-side took
// away useEmulation, the feature gates and imagePullPolicy on a real node
// (docs/real-node.md).
func TestApplyCommandsOwnTheirFields(t *testing.T) {
	out, err := exec.Command("git", "-C", "..", "ls-files", "*.md", "*.yaml", "*.sh", "*.go").Output()
	if err != nil {
		t.Skip("needs git and a checkout")
	}
	cmd := regexp.MustCompile(`kubectl apply --server-side\b[^\n` + "`" + `"]*-k\s+\S*deploy/`)
	seen := 0
	for _, f := range strings.Fields(string(out)) {
		if strings.Contains(f, "testdata/") {
			continue // what ran, as it ran
		}
		fh, err := os.Open(filepath.Join("..", f))
		require.NoError(t, err)
		sc := bufio.NewScanner(fh)
		for n := 1; sc.Scan(); n++ {
			for _, m := range cmd.FindAllString(sc.Text(), -1) {
				seen++
				require.Contains(t, m, "--field-manager=virtnet", "%s:%d: %s", f, n, m)
			}
		}
		require.NoError(t, sc.Err())
		fh.Close()
	}
	require.GreaterOrEqual(t, seen, 5, "the commands of the install (docs/kubevirt-1x.md, the kustomizations, the harness)")
}
