package cloudinit

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/virtnet/virtnet/testrig/kernelvm"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// requireKernelISO skips (see testutil.Skip) unless this test can mount an
// ISO image with the running kernel: root, the isofs file system, loop
// devices and a mount program.
// requireKernelISO reports whether the test was delegated to the kernel VM
// (this kernel has no isofs) and has run there; the caller then returns.
func requireKernelISO(t *testing.T) bool {
	t.Helper()
	testutil.RequireRoot(t)
	fsList, err := os.ReadFile("/proc/filesystems")
	if err != nil || !bytes.Contains(fsList, []byte("\tiso9660\n")) {
		if os.Getenv(kernelvm.EnvInVM) == "1" {
			testutil.Skip(t, "the kernel VM has no iso9660 file system after loading isofs")
		}
		t.Log("this kernel has no iso9660 file system: running in the kernel VM")
		if kernelvm.DelegateWith(t, kernelvm.Options{Always: true, Modules: []string{"loop", "isofs"}}) {
			return true
		}
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		testutil.Skip(t, "no loop devices (/dev/loop-control missing)")
	}
	if _, err := exec.LookPath("mount"); err != nil {
		testutil.Skip(t, "no mount program in PATH")
	}
	return false
}

// mountISO mounts iso read-only through a loop device with the extra
// options and returns the mount point; it is unmounted at cleanup.
func mountISO(t *testing.T, iso, opts string) string {
	t.Helper()
	dir := t.TempDir()
	o := "loop,ro"
	if opts != "" {
		o += "," + opts
	}
	out, err := exec.Command("mount", "-t", "iso9660", "-o", o, iso, dir).CombinedOutput()
	require.NoError(t, err, "mount -o %s %s: %s", o, iso, out)
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// kernelView is what the mounted file system shows: "path mode" lines for
// directories and files, and file contents.
func kernelView(t *testing.T, dir string) (modes []string, files map[string]string) {
	t.Helper()
	files = map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		modes = append(modes, rel+" "+info.Mode().String())
		if !d.IsDir() {
			b, err := os.ReadFile(p)
			files[rel] = string(b)
			return err
		}
		return nil
	}))
	return modes, files
}

// TestKernelMount mounts each kind of image with the real kernel: with
// Rock Ridge (the default, what cloud-init's Linux guest sees), and with
// Rock Ridge off so the Joliet tree (what Windows reads) is used.
func TestKernelMount(t *testing.T) {
	testutil.SkipCoveredUnderRace(t, "a kernel VM test of mount(8) on images this package wrote; the image writers run under -race in the package's other tests")
	if requireKernelISO(t) {
		return
	}
	ctx := context.Background()
	tests := []struct {
		name      string
		build     func(iso, src string) error
		src       map[string]string
		label     string
		wantModes []string
		wantFiles map[string]string
	}{
		{
			name: "nocloud",
			build: func(iso, _ string) error {
				return NoCloud(ctx, iso, Data{UserData: []byte("#cloud-config\n"), NetworkData: []byte("version: 2\n")},
					NoCloudMetadata{InstanceID: "vm.ns", LocalHostname: "vm"})
			},
			label:     "cidata",
			wantModes: []string{"meta-data -rw-r--r--", "network-config -rw-r--r--", "user-data -rw-r--r--"},
			wantFiles: map[string]string{"user-data": "#cloud-config\n", "network-config": "version: 2\n",
				"meta-data": `{"instance-id":"vm.ns","local-hostname":"vm"}`},
		},
		{
			name: "nocloud network only (empty user-data)",
			build: func(iso, _ string) error {
				return NoCloud(ctx, iso, Data{NetworkData: []byte("version: 2\n")}, NoCloudMetadata{InstanceID: "vm.ns"})
			},
			label:     "cidata",
			wantModes: []string{"meta-data -rw-r--r--", "network-config -rw-r--r--", "user-data -rw-r--r--"},
			wantFiles: map[string]string{"user-data": "", "network-config": "version: 2\n", "meta-data": `{"instance-id":"vm.ns"}`},
		},
		{
			name: "config drive",
			build: func(iso, _ string) error {
				return ConfigDrive(ctx, iso, Data{UserData: []byte("#!/bin/sh\n")}, ConfigDriveMetadata{InstanceID: "vm.ns", UUID: "u"})
			},
			label: "config-2",
			wantModes: []string{"openstack drwxr-xr-x", "openstack/latest drwxr-xr-x",
				"openstack/latest/meta_data.json -rw-r--r--", "openstack/latest/user_data -rw-r--r--"},
			wantFiles: map[string]string{"openstack/latest/user_data": "#!/bin/sh\n",
				"openstack/latest/meta_data.json": `{"instance_id":"vm.ns","uuid":"u"}`},
		},
		{
			name:      "sysprep",
			build:     func(iso, src string) error { return Sysprep(ctx, iso, src, "spec.volumes[0].sysprep") },
			src:       map[string]string{"Autounattend.xml": "<unattend/>"},
			label:     "unattendCD",
			wantModes: []string{"Autounattend.xml -rw-r--r--"},
			wantFiles: map[string]string{"Autounattend.xml": "<unattend/>"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(dir, "src")
			require.NoError(t, os.Mkdir(src, 0o755))
			for k, v := range tt.src {
				require.NoError(t, os.WriteFile(filepath.Join(src, k), []byte(v), 0o600))
			}
			iso := filepath.Join(dir, "disk.iso")
			require.NoError(t, tt.build(iso, src))

			modes, files := kernelView(t, mountISO(t, iso, ""))
			t.Logf("kernel, Rock Ridge: %s", strings.Join(modes, ", "))
			require.Equal(t, tt.wantModes, modes)
			require.Equal(t, tt.wantFiles, files)

			_, files = kernelView(t, mountISO(t, iso, "norock"))
			t.Logf("kernel, Joliet: %v", keys(files))
			require.Equal(t, tt.wantFiles, files)

			requireBlkidLabel(t, iso, tt.label)
		})
	}
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// requireBlkidLabel checks the label as udev and cloud-init's ds-identify
// see it, when util-linux's blkid is installed.
func requireBlkidLabel(t *testing.T, iso, label string) {
	t.Helper()
	if _, err := exec.LookPath("blkid"); err != nil {
		t.Log("blkid not in PATH: label checked from the volume descriptors only")
		return
	}
	out, err := exec.Command("blkid", "-o", "value", "-s", "LABEL", iso).CombinedOutput()
	require.NoError(t, err, "blkid: %s", out)
	require.Equal(t, label, strings.TrimSpace(string(out)), "blkid label")
}

// TestBlkidLabel needs no root: blkid reads the image file directly.
func TestBlkidLabel(t *testing.T) {
	if _, err := exec.LookPath("blkid"); err != nil {
		testutil.Skip(t, "blkid (util-linux) not in PATH")
	}
	ctx := context.Background()
	dir := t.TempDir()
	nc, cd := filepath.Join(dir, "nc.iso"), filepath.Join(dir, "cd.iso")
	require.NoError(t, NoCloud(ctx, nc, Data{UserData: []byte("u")}, NoCloudMetadata{InstanceID: "a.b"}))
	require.NoError(t, ConfigDrive(ctx, cd, Data{UserData: []byte("u")}, ConfigDriveMetadata{InstanceID: "a.b"}))
	requireBlkidLabel(t, nc, NoCloudLabel)
	requireBlkidLabel(t, cd, ConfigDriveLabel)
}
