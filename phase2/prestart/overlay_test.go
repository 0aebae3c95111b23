package prestart_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/domxml"
	"github.com/virtnet/virtnet/phase2/prestart"
	"github.com/virtnet/virtnet/testrig/testutil"
)

const containerDiskYAML = `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: testvm, namespace: ns1, uid: ` + uid + `}
spec:
  domain:
    devices:
      disks:
      - {name: root, disk: {bus: virtio}}
      interfaces:
      - {name: default, bridge: {}}
  networks:
  - {name: default, pod: {}}
  volumes:
  - {name: root, containerDisk: {image: example/disk}}
`

// TestContainerDiskOverlay has the storage step make a container disk's
// qcow2 overlay with qemu-img, keep it on a re-run, and fail (leaving
// nothing) when the image is missing.
func TestContainerDiskOverlay(t *testing.T) {
	if _, err := exec.LookPath(prestart.DefaultQemuImg); err != nil {
		testutil.Skip(t, "qemu-img in PATH (Debian package qemu-utils)")
	}
	e := newEnv(t, containerDiskYAML)
	e.hook.Dirs.ContainerDiskDir = filepath.Join(e.root, "container-disks")
	src, err := domxml.DiskPath(e.vmi, 0, e.hook.Dirs)
	require.NoError(t, err)
	// The domain was built with the default container disk dir: rebuild.
	e.hook.Domain, err = domxml.Build(e.vmi, e.hook.Dirs)
	require.NoError(t, err)

	before := tree(t, e.root)
	_, err = e.hook.Run(context.Background())
	var se *prestart.StepError
	require.ErrorAs(t, err, &se)
	require.Equal(t, "storage", se.Step)
	require.ErrorIs(t, err, prestart.ErrNotReadable)
	require.Equal(t, before, tree(t, e.root))

	require.NoError(t, os.MkdirAll(filepath.Dir(src.Backing), 0o755))
	require.NoError(t, os.WriteFile(src.Backing, make([]byte, 1<<20), 0o644))
	r, err := e.hook.Run(context.Background())
	require.NoError(t, err)
	require.NoError(t, r.Stop())
	require.Contains(t, r.Created(), src.Path)
	out, err := exec.Command(prestart.DefaultQemuImg, "info", src.Path).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "file format: qcow2")
	require.Contains(t, string(out), "backing file: "+src.Backing)
	_, err = os.Stat(src.Path + ".staging")
	require.ErrorIs(t, err, os.ErrNotExist)

	r, err = e.hook.Run(context.Background())
	require.NoError(t, err)
	require.NoError(t, r.Stop())
	require.False(t, strings.Contains(strings.Join(r.Created(), " "), src.Path), "the overlay is kept")
}
