// Package node holds the real-node harness (harness.sh, docs/real-node.md):
// the harness itself runs only when told where its artefacts are; these
// tests keep its scripts sound in CI without a node.
package node

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var scripts = []string{"harness.sh", "build-k8s.sh", "images.sh"}

// TestScriptsParse runs bash -n on each script and its -h.
func TestScriptsParse(t *testing.T) {
	for _, s := range scripts {
		t.Run(s, func(t *testing.T) {
			out, err := exec.Command("bash", "-n", s).CombinedOutput()
			require.NoError(t, err, "%s", out)
			out, err = exec.Command("./"+s, "-h").CombinedOutput()
			require.NoError(t, err, "%s", out)
			require.Contains(t, string(out), "e2e/node/"+s, "its usage names it")
		})
	}
}

// TestHarnessNotRunWithoutArtefacts: without VIRTNET_NODE_ARTEFACTS the
// harness says so and succeeds, touching nothing.
func TestHarnessNotRunWithoutArtefacts(t *testing.T) {
	work := t.TempDir() + "/w"
	cmd := exec.Command("./harness.sh", "all")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "VIRTNET_NODE_WORKDIR=" + work}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "not run: VIRTNET_NODE_ARTEFACTS is not set")
	_, err = os.Stat(work)
	require.True(t, os.IsNotExist(err), "no work directory made")
}

// TestMacvtapWithoutKubeVirt checks the filter milestone 2 applies
// deploy/macvtap.yaml through: every document but the VirtualMachine, so
// that the device plugin and its network go in before KubeVirt's CRDs.
func TestMacvtapWithoutKubeVirt(t *testing.T) {
	script, err := os.ReadFile("harness.sh")
	require.NoError(t, err)
	var filter string
	for _, l := range strings.Split(string(script), "\n") {
		if strings.Contains(l, "deploy/macvtap.yaml\" >") {
			filter = l
		}
	}
	require.NotEmpty(t, filter, "harness.sh filters deploy/macvtap.yaml")
	prog := filter[strings.Index(filter, "awk '")+len("awk '"):]
	prog = prog[:strings.Index(prog, "'")]
	out, err := exec.Command("awk", prog, "../../deploy/macvtap.yaml").Output()
	require.NoError(t, err)
	var kinds []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "kind: ") {
			kinds = append(kinds, strings.TrimPrefix(l, "kind: "))
		}
	}
	require.Equal(t, []string{"ConfigMap", "DaemonSet", "NetworkAttachmentDefinition"}, kinds)
}

// TestHarnessRefusesPlantedWorkDir: a work directory that is a symlink
// (planted in world-writable /var/tmp, say) is refused before anything is
// removed or made.
func TestHarnessRefusesPlantedWorkDir(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("the harness runs as root only")
	}
	dir := t.TempDir()
	victim := dir + "/victim"
	require.NoError(t, os.MkdirAll(victim+"/log", 0o755))
	require.NoError(t, os.Symlink(victim, dir+"/work"))
	// A step that does not exist: the check comes first, and a harness
	// without it fails on the step, never running one on this machine.
	cmd := exec.Command("./harness.sh", "no-such-step")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "VIRTNET_NODE_ARTEFACTS=" + dir, "VIRTNET_NODE_WORKDIR=" + dir + "/work"}
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "%s", out)
	require.Contains(t, string(out), "is a symlink or not root's")
	require.DirExists(t, victim+"/log")
}
