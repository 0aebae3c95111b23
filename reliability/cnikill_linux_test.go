//go:build linux

package reliability_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/kubevirt/kvplugin/cniplugin"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// cniVMI is the one-interface VMI the binding CNI plugin runs phase1 for
// on KubeVirt's masquerade attachment of the pod network (its records
// key: "cni-" and the first 16 bytes of sha256("<container ID>/default")).
func cniVMI(containerID string) string {
	sum := sha256.Sum256([]byte(containerID + "/default"))
	return `
kind: VirtualMachineInstance
metadata: {name: virtnet-binding, namespace: default, uid: cni-` + hex.EncodeToString(sum[:16]) + `}
spec:
  domain: {devices: {interfaces: [{name: default, masquerade: {}}]}}
  networks: [{name: default, pod: {}}]
`
}

// TestKilledADDThenDEL kills the phase1 of a CNI ADD with SIGKILL before
// and after each mutating kernel call and at each step of each cache
// write; then the plugin's DEL must succeed, leave the pod's links as the
// CNI left them and nothing at all under cacheDir (no lock file, no
// directory, no temporary file with the pod's IP and MAC).
func TestKilledADDThenDEL(t *testing.T) {
	testutil.RequireRoot(t)
	const ctr = "ctr-kill"
	sc := scenario{name: "masquerade", yaml: cniVMI(ctr)}
	_, _, calls := cleanRun(t, sc)
	steps := writeSteps(t, sc)
	require.Greater(t, calls, 3)
	require.Greater(t, steps, 3)
	type kill struct {
		why string
		at  int
	}
	var kills []kill
	for i := 1; i <= calls; i++ {
		kills = append(kills, kill{"before", i}, kill{"after", i})
	}
	for i := 1; i <= steps; i++ {
		kills = append(kills, kill{"write", i})
	}
	for _, k := range kills {
		t.Run(fmt.Sprintf("%s-%d", k.why, k.at), func(t *testing.T) {
			pod := newPod(t, testutil.PodConfig{})
			pristine := linkState(t, pod.Pod.Path)
			run, err := os.MkdirTemp("/run", "virtnet-test-")
			require.NoError(t, err)
			t.Cleanup(func() { os.RemoveAll(run) })
			dir := filepath.Join(run, "cache")
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), envHelper+"=kill", envNetNS+"="+pod.Pod.Path, envCache+"="+dir,
				envVMI+"="+sc.yaml, envKillAt+fmt.Sprint("=", k.at), envKillWhy+"="+k.why)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "helper output: %s", out)
			require.True(t, ee.Sys().(syscall.WaitStatus).Signaled(), "killed: %s", out)

			conf, err := json.Marshal(map[string]any{"cniVersion": "1.0.0", "name": "virtnet", "type": "virtnet-binding-cni",
				"binding": "masquerade", "cacheDir": dir, "tapOwner": 0, "logLevel": "error",
				"args": map[string]any{"cni": map[string]any{"logicNetworkName": "default"}}})
			require.NoError(t, err)
			require.NoError(t, cniplugin.Plugin{}.Del(&skel.CmdArgs{ContainerID: ctr, Netns: pod.Pod.Path, IfName: "net1", StdinData: conf}))
			require.Equal(t, pristine, linkState(t, pod.Pod.Path), "DEL after the kill: as the CNI left it")
			left, err := os.ReadDir(dir)
			if !os.IsNotExist(err) {
				require.NoError(t, err)
				var names []string
				for _, e := range left {
					names = append(names, e.Name())
				}
				require.Empty(t, names, "nothing left under cacheDir")
			}
		})
	}
}
