package prestart_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/diskfs/go-diskfs/backend/file"
	"github.com/diskfs/go-diskfs/filesystem/iso9660"
	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/domxml"
	"github.com/virtnet/virtnet/phase2"
	"github.com/virtnet/virtnet/phase2/cloudinit"
	"github.com/virtnet/virtnet/phase2/prestart"
	"github.com/virtnet/virtnet/testrig/testutil"
)

const uid = "7f3c0d52-0000-4000-8000-000000000001"

// vmiYAML has one volume of every kind the steps handle, the emptyDisk
// first so that a later storage failure has something to undo.
const vmiYAML = `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: testvm, namespace: ns1, uid: ` + uid + `}
spec:
  domain:
    devices:
      disks:
      - {name: scratch, disk: {bus: virtio}}
      - {name: data, disk: {bus: virtio}}
      - {name: cloudinit, disk: {bus: virtio}}
      - {name: unattend, cdrom: {bus: sata}}
      interfaces:
      - {name: default, bridge: {}}
  networks:
  - {name: default, pod: {}}
  volumes:
  - {name: scratch, emptyDisk: {capacity: 2Gi}}
  - {name: data, persistentVolumeClaim: {claimName: data}}
  - name: cloudinit
    cloudInitNoCloud: {userData: "#cloud-config\n"}
  - {name: unattend, sysprep: {configMap: {name: unattend}}}
`

// env is one hook's world under a temporary directory.
type env struct {
	root string
	vmi  *api.VMI
	hook *prestart.Hook
	ran  []string // step names, in the order they ran
}

func newEnv(t *testing.T, yaml string) *env {
	t.Helper()
	root := t.TempDir()
	vmi, err := api.Load([]byte(yaml))
	require.NoError(t, err)
	dirs := domxml.Options{
		PrivateDir:   filepath.Join(root, "private"),
		EphemeralDir: filepath.Join(root, "ephemeral"),
		EmptyDiskDir: filepath.Join(root, "empty-disks"),
	}
	store, err := cache.New(filepath.Join(root, "cache"))
	require.NoError(t, err)
	testutil.WriteRecord(t, store, uid, &cache.Interface{
		Interface: "default", PodInterface: "eth0", Binding: "bridge",
		Bridge: "k6t-eth0", Tap: "tap0", NIC: "eth0-nic", MAC: cache.MustParseMAC("02:00:00:00:00:01"), MTU: 1440,
		IPAMDisabled: true,
	})
	testutil.WriteRecord(t, store, uid, &cache.Progress{
		Interface: "default", PodInterface: "eth0", Binding: "bridge", State: cache.Finished,
	})
	pvc := filepath.Join(dirs.PrivateDir, "vmi-disks", "data", "disk.img")
	require.NoError(t, os.MkdirAll(filepath.Dir(pvc), 0o755))
	require.NoError(t, os.WriteFile(pvc, []byte("pvc"), 0o644))
	sysprep := filepath.Join(root, "sysprep", "unattend")
	require.NoError(t, os.MkdirAll(sysprep, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(sysprep, "autounattend.xml"), []byte("<unattend/>"), 0o644))
	dom, err := domxml.Build(vmi, dirs)
	require.NoError(t, err)
	e := &env{root: root, vmi: vmi}
	var steps []prestart.Step
	for _, s := range prestart.Steps() {
		steps = append(steps, recorder{s, &e.ran})
	}
	e.hook = &prestart.Hook{
		VMI: vmi, Domain: dom, Store: store, Dirs: dirs,
		SysprepDir: filepath.Join(root, "sysprep"),
		ResolvConf: filepath.Join(root, "no-resolv.conf"),
		Steps:      steps,
	}
	return e
}

// recorder records that its step ran.
type recorder struct {
	prestart.Step
	ran *[]string
}

func (r recorder) Run(ctx context.Context, st *prestart.State) error {
	*r.ran = append(*r.ran, r.Name())
	return r.Step.Run(ctx, st)
}

// tree lists every path under root with its kind and size.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out[rel] = info.Mode().String()
		if info.Mode().IsRegular() {
			out[rel] += fmt.Sprintf(" %d bytes, modified %s", info.Size(), info.ModTime())
		}
		return nil
	}))
	return out
}

func stepNames() []string {
	var n []string
	for _, s := range prestart.Steps() {
		n = append(n, s.Name())
	}
	return n
}

func TestStepsOrder(t *testing.T) {
	require.Equal(t, []string{"storage", "network", "cloud-init", "disk-modes"}, stepNames())
}

func TestRun(t *testing.T) {
	e := newEnv(t, vmiYAML)
	r, err := e.hook.Run(context.Background())
	require.NoError(t, err)
	require.NoError(t, r.Stop())
	require.Equal(t, stepNames(), e.ran)
	require.Empty(t, r.Servers(), "IPAM disabled: no DHCP server")

	// storage: a sparse raw emptyDisk of the capacity, disk driver raw.
	scratch := filepath.Join(e.hook.Dirs.EmptyDiskDir, "scratch.qcow2")
	st, err := os.Stat(scratch)
	require.NoError(t, err)
	require.EqualValues(t, 2<<30, st.Size())
	require.Less(t, st.Sys().(*syscall.Stat_t).Blocks*512, int64(1<<20), "emptyDisk must be sparse")
	require.Equal(t, "raw", diskByAlias(t, e.hook.Domain, "scratch").Driver.Type)

	// network: the interface is in the domain.
	require.Len(t, e.hook.Domain.Devices.Interfaces, 1)
	require.Equal(t, "ua-default", e.hook.Domain.Devices.Interfaces[0].Alias.Name)

	// cloud-init and sysprep: images where the domain's disks point.
	ci := readISO(t, diskByAlias(t, e.hook.Domain, "cloudinit").Source.File.File)
	require.Equal(t, "#cloud-config\n", ci["user-data"])
	require.JSONEq(t, `{"instance-id":"testvm.ns1","local-hostname":"testvm"}`, ci["meta-data"])
	sp := readISO(t, diskByAlias(t, e.hook.Domain, "unattend").Source.File.File)
	require.Equal(t, "<unattend/>", sp["autounattend.xml"])
	require.Contains(t, r.Created(), scratch)

	// Again: converges; the emptyDisk is kept, nothing new is created and
	// the interface is not added twice.
	require.NoError(t, os.WriteFile(scratch, []byte("guest data"), 0o644))
	e.ran = nil
	r, err = e.hook.Run(context.Background())
	require.NoError(t, err)
	require.NoError(t, r.Stop())
	require.Empty(t, r.Created())
	b, err := os.ReadFile(scratch)
	require.NoError(t, err)
	require.Equal(t, "guest data", string(b))
	require.Len(t, e.hook.Domain.Devices.Interfaces, 1)
}

// TestRunBuildsDomain: without Hook.Domain the hook builds the domain from
// Dirs and returns it completed; it is the domain a caller-built one
// becomes, and the caller's Hook is left as it was.
func TestRunBuildsDomain(t *testing.T) {
	e := newEnv(t, vmiYAML)
	given := e.hook.Domain
	e.hook.Domain = nil
	r, err := e.hook.Run(context.Background())
	require.NoError(t, err)
	require.NoError(t, r.Stop())
	require.Nil(t, e.hook.Domain)
	require.NotNil(t, r.Domain())
	require.Len(t, r.Domain().Devices.Interfaces, 1)
	require.Equal(t, "raw", diskByAlias(t, r.Domain(), "scratch").Driver.Type)
	built, err := r.Domain().Marshal()
	require.NoError(t, err)

	e.hook.Domain = given
	r, err = e.hook.Run(context.Background())
	require.NoError(t, err)
	require.NoError(t, r.Stop())
	require.Same(t, given, r.Domain())
	completed, err := given.Marshal()
	require.NoError(t, err)
	require.Equal(t, completed, built)

}

func TestHostname(t *testing.T) {
	e := newEnv(t, vmiYAML)
	e.hook.Hostname = "override"
	r, err := e.hook.Run(context.Background())
	require.NoError(t, err)
	require.NoError(t, r.Stop())
	ci := readISO(t, diskByAlias(t, e.hook.Domain, "cloudinit").Source.File.File)
	require.JSONEq(t, `{"instance-id":"testvm.ns1","local-hostname":"override"}`, ci["meta-data"])
}

// TestStepFailure makes each real step fail in turn: the run ends with a
// StepError naming it, no later step ran, and the file system and the
// domain are as before the run.
func TestStepFailure(t *testing.T) {
	tests := []struct {
		name    string
		step    string
		breakIt func(t *testing.T, e *env)
		is      func(t *testing.T, err error)
	}{
		{"pvc missing", "storage", func(t *testing.T, e *env) {
			require.NoError(t, os.Remove(filepath.Join(e.hook.Dirs.PrivateDir, "vmi-disks", "data", "disk.img")))
		}, func(t *testing.T, err error) {
			require.ErrorIs(t, err, prestart.ErrNotReadable)
			require.ErrorIs(t, err, prestart.ErrDisk)
			require.ErrorContains(t, err, `volume "data": disk `)
		}},
		{"emptyDisk capacity", "storage", func(t *testing.T, e *env) {
			e.vmi.Spec.Volumes[0].EmptyDisk.Capacity = "lots"
		}, func(t *testing.T, err error) {
			require.ErrorContains(t, err, `spec.volumes[0].emptyDisk.capacity "lots"`)
		}},
		{"no cache record", "network", func(t *testing.T, e *env) {
			require.NoError(t, e.hook.Store.Delete(uid, "default"))
		}, func(t *testing.T, err error) {
			var me *phase2.MissingCacheError
			require.ErrorAs(t, err, &me)
		}},
		{"dhcp server cannot bind", "network", func(t *testing.T, e *env) {
			testutil.WriteRecord(t, e.hook.Store, uid, &cache.Interface{
				Interface: "default", PodInterface: "eth0", Binding: "bridge",
				Bridge: "k6t-nosuchbr", Tap: "tap0", MAC: cache.MustParseMAC("02:00:00:00:00:01"), MTU: 1440,
				IPv4: netip.MustParsePrefix("10.244.1.7/24"), Gateway: netip.MustParseAddr("10.244.1.1"), ServerIPv4: netip.MustParseAddr("169.254.75.10"),
			})
		}, func(t *testing.T, err error) {
			require.ErrorContains(t, err, "k6t-nosuchbr")
		}},
		{"bad base64", "cloud-init", func(t *testing.T, e *env) {
			e.vmi.Spec.Volumes[2].CloudInitNoCloud = &api.CloudInitSource{UserDataBase64: "!!"}
		}, func(t *testing.T, err error) {
			require.ErrorIs(t, err, cloudinit.ErrBadBase64)
		}},
		{"image path taken by a directory", "cloud-init", func(t *testing.T, e *env) {
			p := diskByAlias(t, e.hook.Domain, "cloudinit").Source.File.File
			require.NoError(t, os.MkdirAll(filepath.Join(p, "occupied"), 0o755))
		}, func(t *testing.T, err error) {
			require.Error(t, err)
		}},
		// api.Validate refuses this VMI; the writer refuses it too
		// instead of writing the second image over the first.
		{"second cloudInitNoCloud volume", "cloud-init", func(t *testing.T, e *env) {
			e.vmi.Spec.Volumes = append(e.vmi.Spec.Volumes, api.Volume{Name: "ci2", CloudInitNoCloud: &api.CloudInitSource{UserData: "#cloud-config\n"}})
			require.ErrorIs(t, api.Validate(e.vmi), api.ErrInvalid)
		}, func(t *testing.T, err error) {
			require.ErrorIs(t, err, cloudinit.ErrAmbiguous)
			require.ErrorContains(t, err, "spec.volumes[4].cloudInitNoCloud")
		}},
		{"no unattend file", "cloud-init", func(t *testing.T, e *env) {
			require.NoError(t, os.Remove(filepath.Join(e.root, "sysprep", "unattend", "autounattend.xml")))
		}, func(t *testing.T, err error) {
			require.ErrorIs(t, err, cloudinit.ErrNoUnattend)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, vmiYAML)
			tc.breakIt(t, e)
			before := tree(t, e.root)
			domBefore, err := e.hook.Domain.Marshal()
			require.NoError(t, err)

			r, err := e.hook.Run(context.Background())
			require.Nil(t, r)
			var se *prestart.StepError
			require.ErrorAs(t, err, &se)
			require.Equal(t, tc.step, se.Step)
			tc.is(t, err)

			names := stepNames()
			i := 0
			for names[i] != tc.step {
				i++
			}
			require.Equal(t, names[:i+1], e.ran, "steps after %s must not run", tc.step)
			require.Equal(t, before, tree(t, e.root), "the failed run must leave the files as they were")
			domAfter, err := e.hook.Domain.Marshal()
			require.NoError(t, err)
			require.Equal(t, domBefore, domAfter, "the domain must be restored")
		})
	}
}

// fakeStep creates a file (recorded) and then fails if told to.
type fakeStep struct {
	name string
	path string
	fail bool
	ran  *[]string
}

func (f fakeStep) Name() string { return f.name }

func (f fakeStep) Run(_ context.Context, st *prestart.State) error {
	*f.ran = append(*f.ran, f.name)
	if f.path != "" {
		if err := os.WriteFile(f.path, []byte(f.name), 0o644); err != nil {
			return err
		}
		st.Created(f.path)
	}
	if f.fail {
		return errors.New("injected")
	}
	return nil
}

// TestInjectedFailure fails step N of a fake list for every N: steps
// after N never run and every file of steps ≤ N is removed.
func TestInjectedFailure(t *testing.T) {
	names := []string{"a", "b", "c", "d"}
	for failAt := range names {
		t.Run(names[failAt], func(t *testing.T) {
			e := newEnv(t, vmiYAML)
			dir := t.TempDir()
			var ran []string
			var steps []prestart.Step
			for i, n := range names {
				steps = append(steps, fakeStep{name: n, path: filepath.Join(dir, n), fail: i == failAt, ran: &ran})
			}
			e.hook.Steps = steps
			_, err := e.hook.Run(context.Background())
			var se *prestart.StepError
			require.ErrorAs(t, err, &se)
			require.Equal(t, names[failAt], se.Step)
			require.EqualError(t, se.Err, "injected")
			require.Equal(t, names[:failAt+1], ran)
			left, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Empty(t, left)
		})
	}
}

func TestCanceled(t *testing.T) {
	e := newEnv(t, vmiYAML)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := e.hook.Run(ctx)
	var se *prestart.StepError
	require.ErrorAs(t, err, &se)
	require.Equal(t, "storage", se.Step)
	require.ErrorIs(t, err, context.Canceled)
	require.Empty(t, e.ran)
}

func TestHookError(t *testing.T) {
	for _, h := range []prestart.Hook{{}, {VMI: &api.VMI{}}, {VMI: &api.VMI{}, Domain: &libvirtxml.Domain{}}} {
		_, err := h.Run(context.Background())
		require.ErrorIs(t, err, prestart.ErrInvalidHook)
	}
}

func diskByAlias(t *testing.T, dom *libvirtxml.Domain, name string) *libvirtxml.DomainDisk {
	t.Helper()
	for i := range dom.Devices.Disks {
		if d := &dom.Devices.Disks[i]; d.Alias != nil && d.Alias.Name == "ua-"+name {
			return d
		}
	}
	t.Fatalf("no disk ua-%s", name)
	return nil
}

// readISO reads every file of an ISO image with go-diskfs.
func readISO(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	st, err := f.Stat()
	require.NoError(t, err)
	fsys, err := iso9660.Read(file.New(f, true), st.Size(), 0, 2048)
	require.NoError(t, err)
	out := map[string]string{}
	require.NoError(t, fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fsys.ReadFile(p)
		out[p] = string(b)
		return err
	}))
	return out
}

// TestLogLinesPlain: the hook's log lines (each step, a re-run that keeps
// what exists) carry plain values, never a struct dumped as one
// attribute.
func TestLogLinesPlain(t *testing.T) {
	e := newEnv(t, vmiYAML)
	log, lines := testutil.PlainLogger(t)
	e.hook.Logger = log
	for range 2 {
		r, err := e.hook.Run(context.Background())
		require.NoError(t, err)
		require.NoError(t, r.Stop())
	}
	require.Positive(t, lines.Lines())
}
