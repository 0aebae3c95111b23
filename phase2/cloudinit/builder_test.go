package cloudinit

import (
	"context"
	"encoding/base64"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/domxml"
)

func testVMI() *api.VMI {
	return &api.VMI{
		Metadata: api.ObjectMeta{Name: "fedora.lab", Namespace: "ns1", UID: "0b7d4b3c-5a1e-4c43-9a8f-1f3f0f6d2a10",
			Annotations: map[string]string{FlavorAnnotation: "small"}},
		Spec: api.VMISpec{Volumes: []api.Volume{
			{Name: "root", ContainerDisk: &api.ContainerDiskSource{Image: "quay.io/containerdisks/fedora"}},
			{Name: "ci", CloudInitNoCloud: &api.CloudInitSource{
				UserDataBase64:       base64.StdEncoding.EncodeToString([]byte("#cloud-config\n")),
				NetworkDataSecretRef: &api.LocalObjectReference{Name: "net-secret"}}},
			{Name: "cd", CloudInitConfigDrive: &api.CloudInitSource{UserDataSecretRef: &api.LocalObjectReference{Name: "user-secret"}}},
			{Name: "win", Sysprep: &api.SysprepSource{ConfigMap: &api.LocalObjectReference{Name: "unattend"}}},
		}},
	}
}

// testMounts makes the secret and sysprep directories testVMI needs.
func testMounts(t *testing.T, root string) (secretDir, sysprepDir string) {
	t.Helper()
	secretDir, sysprepDir = filepath.Join(root, "secret"), filepath.Join(root, "sysprep")
	for p, v := range map[string]string{
		"secret/ci/networkData":         "version: 2\n",
		"secret/cd/userdata":            "#!/bin/sh\necho hi\n",
		"sysprep/win/autounattend.xml":  "<unattend/>",
		"sysprep/win/..data/ignored.js": "x",
	} {
		p = filepath.Join(root, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(v), 0o600))
	}
	return secretDir, sysprepDir
}

func TestBuild(t *testing.T) {
	root := t.TempDir()
	secretDir, sysprepDir := testMounts(t, root)
	out := filepath.Join(root, "out")
	b := &Builder{Dir: out, SecretDir: secretDir, SysprepDir: sysprepDir, Logger: slog.New(slog.DiscardHandler)}
	vmi := testVMI()
	disks, err := b.Build(context.Background(), vmi)
	require.NoError(t, err)
	require.Equal(t, []Disk{
		{Volume: "ci", Kind: KindNoCloud, Path: filepath.Join(out, "cloud-init-data/ns1/fedora.lab/noCloud.iso")},
		{Volume: "cd", Kind: KindConfigDrive, Path: filepath.Join(out, "cloud-init-data/ns1/fedora.lab/configdrive.iso")},
		{Volume: "win", Kind: KindSysprep, Path: filepath.Join(out, "sysprep-disks/win.iso")},
	}, disks)
	for i, d := range disks {
		p, ok := domxml.ISOPath(out, vmi, vmi.Spec.Volumes[i+1])
		require.True(t, ok)
		require.Equal(t, d.Path, p, "ISOPath agrees with Build")
	}
	require.Equal(t, []string{
		"cloud-init-data", "cloud-init-data/ns1", "cloud-init-data/ns1/fedora.lab",
		"cloud-init-data/ns1/fedora.lab/configdrive.iso", "cloud-init-data/ns1/fedora.lab/noCloud.iso",
		"sysprep-disks", "sysprep-disks/win.iso",
	}, listTree(t, out))

	require.Equal(t, map[string]string{
		"user-data":      "#cloud-config\n",
		"meta-data":      `{"instance-type":"small","instance-id":"fedora.lab.ns1","local-hostname":"fedora"}`,
		"network-config": "version: 2\n",
	}, readImage(t, disks[0].Path).files)
	require.Equal(t, map[string]string{
		"openstack/latest/user_data":      "#!/bin/sh\necho hi\n",
		"openstack/latest/meta_data.json": `{"instance_type":"small","instance_id":"fedora.lab.ns1","hostname":"fedora","uuid":"0b7d4b3c-5a1e-4c43-9a8f-1f3f0f6d2a10"}`,
	}, readImage(t, disks[1].Path).files)
	require.Equal(t, map[string]string{"autounattend.xml": "<unattend/>"}, readImage(t, disks[2].Path).files)
}

// TestBuildErrorsLeaveNothing: every bad source, wherever it sits among the
// volumes, fails before the first image is written.
func TestBuildErrorsLeaveNothing(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(vmi *api.VMI, root string)
		wantErr error
		path    string
	}{
		{name: "bad base64 in the last cloud-init volume", wantErr: ErrBadBase64, path: "spec.volumes[2].cloudInitConfigDrive.userDataBase64",
			mutate: func(vmi *api.VMI, _ string) {
				vmi.Spec.Volumes[2].CloudInitConfigDrive = &api.CloudInitSource{UserDataBase64: "%%%"}
			}},
		{name: "user data over the limit", wantErr: ErrTooLarge, path: "spec.volumes[1].cloudInitNoCloud.userData",
			mutate: func(vmi *api.VMI, _ string) {
				vmi.Spec.Volumes[1].CloudInitNoCloud = &api.CloudInitSource{UserData: strings.Repeat("#", MaxInlineUserData+1)}
			}},
		{name: "no data", wantErr: ErrNoData, path: "spec.volumes[1].cloudInitNoCloud",
			mutate: func(vmi *api.VMI, _ string) { vmi.Spec.Volumes[1].CloudInitNoCloud = &api.CloudInitSource{} }},
		{name: "secret not mounted", wantErr: ErrSecretMissing, path: "spec.volumes[2].cloudInitConfigDrive.secretRef",
			mutate: func(_ *api.VMI, root string) { require.NoError(t, os.RemoveAll(filepath.Join(root, "secret/cd"))) }},
		{name: "sysprep without unattend file", wantErr: ErrNoUnattend, path: "spec.volumes[3].sysprep",
			mutate: func(_ *api.VMI, root string) {
				require.NoError(t, os.Remove(filepath.Join(root, "sysprep/win/autounattend.xml")))
			}},
		{name: "sysprep not mounted", wantErr: ErrSecretMissing, path: "spec.volumes[3].sysprep",
			mutate: func(_ *api.VMI, root string) { require.NoError(t, os.RemoveAll(filepath.Join(root, "sysprep/win"))) }},
		{name: "two nocloud volumes", wantErr: ErrAmbiguous, path: "spec.volumes[4].cloudInitNoCloud",
			mutate: func(vmi *api.VMI, _ string) {
				vmi.Spec.Volumes = append(vmi.Spec.Volumes, api.Volume{Name: "ci2", CloudInitNoCloud: &api.CloudInitSource{UserData: "x"}})
			}},
		{name: "name leaving the directory", wantErr: errUnsafeName, path: "spec.volumes[1]",
			mutate: func(vmi *api.VMI, _ string) { vmi.Metadata.Namespace = ".." }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			secretDir, sysprepDir := testMounts(t, root)
			vmi := testVMI()
			tt.mutate(vmi, root)
			out := filepath.Join(root, "out")
			b := &Builder{Dir: out, SecretDir: secretDir, SysprepDir: sysprepDir}
			disks, err := b.Build(context.Background(), vmi)
			require.ErrorIs(t, err, tt.wantErr)
			require.Nil(t, disks)
			require.ErrorIs(t, err, ErrBadSource)
			require.ErrorContains(t, err, "bad source "+tt.path+": ")
			require.Empty(t, listTree(t, out), "nothing may be left behind")
		})
	}
}

// TestBuildWriteErrors: failures while writing leave no staging file,
// no scratch directory and the previous image untouched.
func TestBuildWriteErrors(t *testing.T) {
	t.Run("canceled context", func(t *testing.T) {
		root := t.TempDir()
		secretDir, sysprepDir := testMounts(t, root)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		out := filepath.Join(root, "out")
		_, err := (&Builder{Dir: out, SecretDir: secretDir, SysprepDir: sysprepDir}).Build(ctx, testVMI())
		require.ErrorIs(t, err, context.Canceled)
		require.Empty(t, listTree(t, out))
	})
	t.Run("output root is a file", func(t *testing.T) {
		root := t.TempDir()
		secretDir, sysprepDir := testMounts(t, root)
		out := filepath.Join(root, "out")
		require.NoError(t, os.WriteFile(out, nil, 0o644))
		_, err := (&Builder{Dir: out, SecretDir: secretDir, SysprepDir: sysprepDir}).Build(context.Background(), testVMI())
		require.Error(t, err)
		require.Contains(t, err.Error(), `volume "ci"`)
		st, err := os.Stat(out)
		require.NoError(t, err)
		require.False(t, st.IsDir())
	})
	t.Run("staging path blocked keeps the old image", func(t *testing.T) {
		root := t.TempDir()
		iso := filepath.Join(root, "out", "noCloud.iso")
		require.NoError(t, NoCloud(context.Background(), iso, Data{UserData: []byte("old")}, NoCloudMetadata{InstanceID: "a.b"}))
		// A directory (with content) where the staging file goes makes
		// opening it fail after the scratch tree was written.
		require.NoError(t, os.MkdirAll(filepath.Join(iso+stagingSuffix, "x"), 0o755))
		err := NoCloud(context.Background(), iso, Data{UserData: []byte("new")}, NoCloudMetadata{InstanceID: "a.b"})
		require.Error(t, err)
		require.Contains(t, err.Error(), iso)
		require.Equal(t, "old", readImage(t, iso).files["user-data"])
		require.Equal(t, []string{"noCloud.iso", "noCloud.iso.staging", "noCloud.iso.staging/x"}, listTree(t, filepath.Dir(iso)),
			"no scratch directory left")
	})
}

func TestConfigDriveUUIDFallsBackToFirmware(t *testing.T) {
	vmi := &api.VMI{Metadata: api.ObjectMeta{Name: "vm", Namespace: "ns"},
		Spec: api.VMISpec{Domain: api.DomainSpec{Firmware: &api.Firmware{UUID: "fw-uuid"}}}}
	require.Equal(t, "fw-uuid", NewConfigDriveMetadata(vmi).UUID)
	vmi.Metadata.UID = "uid"
	require.Equal(t, "uid", NewConfigDriveMetadata(vmi).UUID)
}
