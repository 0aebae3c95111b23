package cloudinit

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestImages(t *testing.T) {
	meta := NoCloudMetadata{InstanceID: "vm.ns", LocalHostname: "vm"}
	cdMeta := ConfigDriveMetadata{InstanceID: "vm.ns", Hostname: "vm", UUID: "5d307ca9-b3ef-428c-8861-06e72d69f223"}
	tests := []struct {
		name      string
		build     func(ctx context.Context, iso, src string) error
		srcFiles  map[string]string // sysprep source directory
		label     string
		wantFiles map[string]string
	}{
		{
			name: "nocloud user data",
			build: func(ctx context.Context, iso, _ string) error {
				return NoCloud(ctx, iso, Data{UserData: []byte("#cloud-config\npassword: x\n")}, meta)
			},
			label: "cidata",
			wantFiles: map[string]string{
				"user-data": "#cloud-config\npassword: x\n",
				"meta-data": `{"instance-id":"vm.ns","local-hostname":"vm"}`,
			},
		},
		{
			name: "nocloud network only",
			build: func(ctx context.Context, iso, _ string) error {
				return NoCloud(ctx, iso, Data{NetworkData: []byte("version: 2\n")}, meta)
			},
			label: "cidata",
			wantFiles: map[string]string{
				"user-data":      "",
				"meta-data":      `{"instance-id":"vm.ns","local-hostname":"vm"}`,
				"network-config": "version: 2\n",
			},
		},
		{
			// go-diskfs zeroes the sector after a last file whose size is a
			// multiple of 2048: see imageFile.
			name: "nocloud user data of exactly 2048 bytes",
			build: func(ctx context.Context, iso, _ string) error {
				return NoCloud(ctx, iso, Data{UserData: []byte(strings.Repeat("#", 2048))}, meta)
			},
			label: "cidata",
			wantFiles: map[string]string{
				"user-data": strings.Repeat("#", 2048),
				"meta-data": `{"instance-id":"vm.ns","local-hostname":"vm"}`,
			},
		},
		{
			name: "config drive",
			build: func(ctx context.Context, iso, _ string) error {
				return ConfigDrive(ctx, iso, Data{UserData: []byte("#!/bin/sh\n"), NetworkData: []byte(`{"links":[]}`)}, cdMeta)
			},
			label: "config-2",
			wantFiles: map[string]string{
				"openstack/latest/user_data":         "#!/bin/sh\n",
				"openstack/latest/meta_data.json":    `{"instance_id":"vm.ns","hostname":"vm","uuid":"5d307ca9-b3ef-428c-8861-06e72d69f223"}`,
				"openstack/latest/network_data.json": `{"links":[]}`,
			},
		},
		{
			name: "sysprep autounattend mixed case",
			build: func(ctx context.Context, iso, src string) error {
				return Sysprep(ctx, iso, src, "spec.volumes[0].sysprep")
			},
			srcFiles: map[string]string{"Autounattend.xml": "<unattend/>", "setup-script.ps1": "Write-Host hi"},
			label:    "unattendCD",
			wantFiles: map[string]string{
				"Autounattend.xml": "<unattend/>",
				"setup-script.ps1": "Write-Host hi",
			},
		},
		{
			name: "sysprep unattend upper case",
			build: func(ctx context.Context, iso, src string) error {
				return Sysprep(ctx, iso, src, "spec.volumes[0].sysprep")
			},
			srcFiles:  map[string]string{"UNATTEND.XML": "<unattend/>"},
			label:     "unattendCD",
			wantFiles: map[string]string{"UNATTEND.XML": "<unattend/>"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(dir, "src")
			require.NoError(t, os.Mkdir(src, 0o755))
			for k, v := range tt.srcFiles {
				require.NoError(t, os.WriteFile(filepath.Join(src, k), []byte(v), 0o600))
			}
			out := filepath.Join(dir, "out", "disk.iso")
			require.NoError(t, tt.build(context.Background(), out, src))

			st, err := os.Stat(out)
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o644), st.Mode().Perm())
			require.Equal(t, []string{"disk.iso"}, listTree(t, filepath.Dir(out)), "staging or scratch left behind")

			img := readImage(t, out)
			require.Equal(t, pad(tt.label, volumeIDLength), img.primaryLabel)
			require.Equal(t, pad(tt.label, volumeIDLength/2), img.jolietLabel)
			require.True(t, img.rockRidge, "Rock Ridge")
			require.Equal(t, tt.wantFiles, img.files)
			require.Equal(t, tt.wantFiles, img.jolietFiles, "Joliet tree")

			// Building again replaces the image in place.
			require.NoError(t, tt.build(context.Background(), out, src))
			require.Equal(t, []string{"disk.iso"}, listTree(t, filepath.Dir(out)))
		})
	}
}

// TestSysprepKubeletLayout checks a config map as the kubelet mounts it:
// keys are links into a "..data" link to a timestamped directory.
func TestSysprepKubeletLayout(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	ts := filepath.Join(src, "..2024_01_01_00_00_00.1")
	require.NoError(t, os.MkdirAll(ts, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ts, "autounattend.xml"), []byte("<a/>"), 0o644))
	require.NoError(t, os.Symlink(filepath.Base(ts), filepath.Join(src, "..data")))
	require.NoError(t, os.Symlink("..data/autounattend.xml", filepath.Join(src, "autounattend.xml")))
	require.NoError(t, os.Mkdir(filepath.Join(src, "subdir"), 0o755))

	out := filepath.Join(dir, "s.iso")
	require.NoError(t, Sysprep(context.Background(), out, src, "spec.volumes[0].sysprep"))
	require.Equal(t, map[string]string{"autounattend.xml": "<a/>"}, readImage(t, out).files)
}
