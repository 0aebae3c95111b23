package domxml

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
)

func TestISOPath(t *testing.T) {
	vmi := &api.VMI{Metadata: api.ObjectMeta{Name: "vm", Namespace: "default"}}
	tests := []struct {
		name string
		vmi  *api.VMI
		vol  api.Volume
		want string
	}{
		{"nocloud", vmi, api.Volume{Name: "a", CloudInitNoCloud: &api.CloudInitSource{}}, "/d/cloud-init-data/default/vm/noCloud.iso"},
		{"config drive", vmi, api.Volume{Name: "a", CloudInitConfigDrive: &api.CloudInitSource{}}, "/d/cloud-init-data/default/vm/configdrive.iso"},
		{"sysprep", vmi, api.Volume{Name: "win", Sysprep: &api.SysprepSource{}}, "/d/sysprep-disks/win.iso"},
		{"container disk", vmi, api.Volume{Name: "a", ContainerDisk: &api.ContainerDiskSource{}}, ""},
		{"sysprep volume name with a slash", vmi, api.Volume{Name: "../x", Sysprep: &api.SysprepSource{}}, ""},
		{"empty namespace", &api.VMI{Metadata: api.ObjectMeta{Name: "vm"}}, api.Volume{Name: "a", CloudInitNoCloud: &api.CloudInitSource{}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ISOPath("/d", tt.vmi, tt.vol)
			require.Equal(t, tt.want != "", ok)
			require.Equal(t, tt.want, got)
		})
	}
}

// TestNoImageWriterDependencies guards domxml's place below the writers:
// it names the images (ISOPath) but neither imports phase2/cloudinit nor
// links go-diskfs.
func TestNoImageWriterDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, dep := range strings.Fields(string(out)) {
		require.NotContains(t, dep, "go-diskfs", "domxml links an ISO writer")
		require.NotContains(t, dep, "virtnet/phase2", "domxml imports a phase2 package")
	}
}
