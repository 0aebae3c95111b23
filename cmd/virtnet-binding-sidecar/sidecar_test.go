//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/internal/names"
	"github.com/virtnet/virtnet/kubevirt/hookapi/info"
	"github.com/virtnet/virtnet/kubevirt/hookapi/v1alpha3"
	"github.com/virtnet/virtnet/kubevirt/kvplugin"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/testrig/kernelvm"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// Linked under the name virtnet-binding-sidecar, the test binary is the
// sidecar (so that it runs as another user, as KubeVirt runs it).
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "virtnet-binding-sidecar" {
		main()
		os.Exit(0)
	}
	if filepath.Base(os.Args[0]) == "udp67-squatter" {
		squatUDP67()
	}
	os.Exit(m.Run())
}

// prepare does in pod what virtnet-binding-cni's ADD does for the pod
// network: phase1 for one interface, the hand-off record on the tap, the
// unprivileged port start lowered to 67 (the CNI plugin's own tests run it
// through libcni).
func prepare(t *testing.T, pod *testutil.Pod, method string) (*api.VMI, *cache.Store) {
	iface := api.Interface{Name: "default"}
	switch method {
	case api.BindingBridge:
		iface.Bridge = &struct{}{}
	case api.BindingMasquerade:
		iface.Masquerade = &struct{}{}
	}
	vmi := &api.VMI{Metadata: api.ObjectMeta{Name: "x", Namespace: "default", UID: "cni-test"},
		Spec: api.VMISpec{Domain: api.DomainSpec{Devices: api.Devices{Interfaces: []api.Interface{iface}}},
			Networks: []api.Network{{Name: "default", Pod: &api.PodNetwork{}}}}}
	api.SetDefaults(vmi)
	require.NoError(t, api.Validate(vmi))
	store, err := cache.New(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, phase1.Run(context.Background(), vmi, pod.Pod.Path, store, phase1.Options{}))
	rec, err := store.ReadInterface("cni-test", "default")
	require.NoError(t, err)
	alias, err := kvplugin.Encode(rec)
	require.NoError(t, err)
	require.NoError(t, kvplugin.WriteAlias(pod.Pod.Path, rec.Tap, alias))
	require.NoError(t, pod.Pod.Do(func() error {
		return os.WriteFile("/proc/sys/net/ipv4/ip_unprivileged_port_start", []byte("67"), 0o644)
	}))
	return vmi, store
}

// client calls the sidecar the way virt-launcher's hook manager does: one
// connection per call, Info with a 1 s deadline, then the callbacks.
type client struct {
	t    *testing.T
	sock string
}

func (c *client) conn() *grpc.ClientConn {
	conn, err := grpc.NewClient("unix://"+c.sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(c.t, err)
	c.t.Cleanup(func() { conn.Close() })
	return conn
}

func (c *client) info() *info.InfoResult {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	res, err := info.NewInfoClient(c.conn()).Info(ctx, &info.InfoParams{})
	require.NoError(c.t, err)
	return res
}

func (c *client) define(domain, vmi []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := v1alpha3.NewCallbacksClient(c.conn()).OnDefineDomain(ctx, &v1alpha3.OnDefineDomainParams{DomainXML: domain, Vmi: vmi})
	if err != nil {
		return nil, err
	}
	return res.GetDomainXML(), nil
}

func waitSocket(t *testing.T, path string, proc *exec.Cmd) {
	for range 100 {
		// The file appears at bind(), a moment before listen(): wait
		// until a connection is accepted (a dial in between is refused).
		if fi, err := os.Stat(path); err == nil && fi.Mode().Type() == os.ModeSocket {
			if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
				c.Close()
				return
			}
		}
		if proc != nil && proc.ProcessState != nil {
			t.Fatalf("sidecar exited: %v", proc.ProcessState)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no socket at %s", path)
}

func needBinary(t *testing.T, name string) string {
	p, err := exec.LookPath(name)
	if err != nil {
		testutil.Skip(t, name+" is not installed")
	}
	return p
}

// vmPort plugs a "VM" into the pod's bridge: a veth whose far end, eth0
// with the VM's MAC, is in a namespace of its own.
func vmPort(t *testing.T, pod *testutil.Pod, bridge, mac string) *testutil.NS {
	vm := testutil.NewNS(t, "vn-vm")
	testutil.AddVeth(t, pod.Pod, "vmport", vm, "eth0", pod.MTU)
	br, err := pod.Pod.Handle.LinkByName(bridge)
	require.NoError(t, err)
	port, err := pod.Pod.Handle.LinkByName("vmport")
	require.NoError(t, err)
	require.NoError(t, pod.Pod.Handle.LinkSetMaster(port, br))
	l, err := vm.Handle.LinkByName("eth0")
	require.NoError(t, err)
	hw, err := net.ParseMAC(mac)
	require.NoError(t, err)
	require.NoError(t, vm.Handle.LinkSetHardwareAddr(l, hw))
	return vm
}

// syncBuffer collects a subprocess's output for reading while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

const udhcpcScript = `#!/bin/sh
env > "$OUT.$1"
exit 0
`

// lease runs busybox udhcpc in vm and returns its "bound" environment.
func lease(t *testing.T, vm *testutil.NS) map[string]string {
	busybox := needBinary(t, "busybox")
	dir := t.TempDir()
	script := filepath.Join(dir, "script")
	require.NoError(t, os.WriteFile(script, []byte(udhcpcScript), 0o755))
	out := filepath.Join(dir, "env")
	cmd := exec.Command(busybox, "udhcpc", "-i", "eth0", "-s", script, "-f", "-q", "-n",
		"-t", "5", "-T", "1", "-A", "1", "-O", "mtu")
	cmd.Env = append(os.Environ(), "OUT="+out)
	var b syncBuffer
	cmd.Stdout, cmd.Stderr = &b, &b
	// Started inside vm's namespace (no ip netns exec: the kernel VM has
	// no iproute2).
	require.NoError(t, vm.Do(cmd.Run), "udhcpc: %s", b.String())
	f, err := os.Open(out + ".bound")
	require.NoError(t, err, "udhcpc bound: %s", b.String())
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			env[k] = v
		}
	}
	return env
}

// validateKubeVirt checks a domain derived from KubeVirt's converter output
// with libvirt's own parser (virsh define on the test driver) and with
// virt-xml-validate. KubeVirt v1.9.0 itself renders empty <bios>,
// <baseBoard> and <chassis> groups in <sysinfo type="smbios"> when the
// cluster sets no such SMBIOS fields; libvirt accepts them at define, its
// RelaxNG schema does not (one entry at least). Those empty groups, and
// only they, are dropped before virt-xml-validate; everything the sidecar
// adds is validated as is.
func validateKubeVirt(t *testing.T, xml []byte) {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "domain.xml")
	require.NoError(t, os.WriteFile(p, xml, 0o644))
	if os.Getenv(kernelvm.EnvInVM) != "1" { // the kernel VM has no libvirt
		virsh := needBinary(t, "virsh")
		out, err := exec.Command(virsh, "-q", "-c", "test:///default", "define", p).CombinedOutput()
		require.NoError(t, err, "virsh define: %s", out)
	}

	var dom libvirtxml.Domain
	require.NoError(t, dom.Unmarshal(string(xml)))
	for i := range dom.SysInfo {
		sm := dom.SysInfo[i].SMBIOS
		if sm == nil {
			continue
		}
		if sm.BIOS != nil && len(sm.BIOS.Entry) == 0 {
			sm.BIOS = nil
		}
		if sm.Chassis != nil && len(sm.Chassis.Entry) == 0 {
			sm.Chassis = nil
		}
		var boards []libvirtxml.DomainSysInfoBaseBoard
		for _, b := range sm.BaseBoard {
			if len(b.Entry) > 0 {
				boards = append(boards, b)
			}
		}
		sm.BaseBoard = boards
	}
	s, err := dom.Marshal()
	require.NoError(t, err)
	validate(t, []byte(s))
}

// validate runs virt-xml-validate; in the kernel VM, which has no shell
// tools, what it runs: xmllint with libvirt's domain schema (both copied
// in by vmTools).
func validate(t *testing.T, xml []byte) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "domain.xml")
	require.NoError(t, os.WriteFile(p, xml, 0o644))
	var cmd *exec.Cmd
	if os.Getenv(kernelvm.EnvInVM) == "1" {
		cmd = exec.Command(xmllint, "--noout", "--relaxng", domainSchema, p)
	} else {
		cmd = exec.Command(needBinary(t, "virt-xml-validate"), p, "domain")
	}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "virt-xml-validate: %s", out)
}

const (
	xmllint      = "/usr/bin/xmllint"
	domainSchema = "/usr/share/libvirt/schemas/domain.rng"
)

// vmTools returns kernelvm Files with host binaries and their shared
// libraries (as ldd resolves them) at their host paths, and libvirt's
// schemas.
func vmTools(t *testing.T, bins ...string) map[string]string {
	files := map[string]string{}
	for _, bin := range bins {
		files[bin] = bin
		out, err := exec.Command("ldd", bin).Output()
		require.NoError(t, err, "ldd %s", bin)
		for _, line := range strings.Split(string(out), "\n") {
			for _, f := range strings.Fields(line) {
				if strings.HasPrefix(f, "/") {
					files[f] = f
				}
			}
		}
	}
	schemas, err := filepath.Glob(filepath.Join(filepath.Dir(domainSchema), "*.rng"))
	require.NoError(t, err)
	require.NotEmpty(t, schemas, "libvirt's schemas (Debian: libvirt-clients)")
	for _, f := range schemas {
		files[f] = f
	}
	return files
}

// runningSidecar is the sidecar binary started by startSidecar.
type runningSidecar struct {
	hooks  string // its hooks directory (the container's /var/run/kubevirt-hooks)
	sock   string
	logs   *syncBuffer
	exited chan error
}

// startSidecar runs the sidecar binary as KubeVirt runs a non-root VMI's
// sidecar: its own process as uid 107 with no capabilities at all, in the
// pod's network namespace, no arguments but the test's paths, the plugin
// name in NETWORK_BINDING_PLUGIN_NAME. It returns once the socket is there,
// alone in the hooks directory.
func startSidecar(t *testing.T, setpriv string, pod *testutil.Pod, plugin string) *runningSidecar {
	// The binary and the hooks directory must be usable by uid 107.
	dir, err := os.MkdirTemp("", "virtnet-sidecar-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	self, err := os.Executable()
	require.NoError(t, err)
	bin := filepath.Join(dir, "virtnet-binding-sidecar")
	data, err := os.ReadFile(self)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bin, data, 0o755))
	hooks := filepath.Join(dir, "hooks")
	require.NoError(t, os.Mkdir(hooks, 0o755))
	require.NoError(t, os.Chown(hooks, 107, 107))
	resolv := filepath.Join(dir, "resolv.conf")
	require.NoError(t, os.WriteFile(resolv, []byte("nameserver 10.96.0.10\nsearch default.svc.cluster.local svc.cluster.local cluster.local\n"), 0o644))

	cmd := exec.Command(setpriv, "--reuid=107", "--regid=107", "--clear-groups",
		"--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--", bin, "-socket-dir", hooks, "-resolv-conf", resolv)
	cmd.Env = []string{"NETWORK_BINDING_PLUGIN_NAME=" + plugin, "CONTAINER_NAME=hook-sidecar-0", "PATH=/usr/bin:/bin"}
	if ld := os.Getenv("LD_LIBRARY_PATH"); ld != "" {
		cmd.Env = append(cmd.Env, "LD_LIBRARY_PATH="+ld) // the kernel VM's
	}
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	// Forked inside the pod's network namespace.
	require.NoError(t, pod.Pod.Do(cmd.Start))
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		t.Logf("sidecar log:\n%s", logs)
	})
	sock := filepath.Join(hooks, plugin+".sock")
	waitSocket(t, sock, nil)
	entries, err := os.ReadDir(hooks)
	require.NoError(t, err)
	require.Len(t, entries, 1, "nothing but the socket in the hooks directory")
	return &runningSidecar{hooks: hooks, sock: sock, logs: logs, exited: exited}
}

// newerVMI is vmiJSON with fields no KubeVirt release virtnet knows has:
// spec.domain.futureKnob, spec.domain.devices.interfaces[0].futureNICKnob
// and status.futureStatus.
func newerVMI(t *testing.T, vmiJSON []byte) []byte {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal(vmiJSON, &v))
	spec := v["spec"].(map[string]any)
	dom := spec["domain"].(map[string]any)
	dom["futureKnob"] = map[string]any{"enabled": true}
	iface := dom["devices"].(map[string]any)["interfaces"].([]any)[0].(map[string]any)
	iface["futureNICKnob"] = "on"
	st, _ := v["status"].(map[string]any)
	if st == nil {
		st = map[string]any{}
		v["status"] = st
	}
	st["futureStatus"] = []any{1}
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// TestSidecarUnprivileged is the masquerade plugin's sidecar as KubeVirt
// runs it: its own process as uid 107 with no capabilities at all (a
// non-root VMI's sidecar), in the pod's network namespace, called over
// its unix socket like virt-launcher calls it (Info, OnDefineDomain with
// KubeVirt's domain, Shutdown). The result validates against libvirt's
// schema, a client with the VM's MAC on the pod's bridge leases the VM
// address from the sidecar's DHCP server, and after Shutdown the process
// exits and its socket is gone.
//
// On a dual-stack pod the sidecar has no CAP_NET_RAW for IPv6 router
// advertisements: it says so once and serves DHCPv4 and DHCPv6.
func TestSidecarUnprivileged(t *testing.T) {
	testutil.RequireRoot(t)
	setpriv := needBinary(t, "setpriv")
	for _, tc := range []struct {
		name string
		cfg  testutil.PodConfig
	}{
		{"ipv4", testutil.PodConfig{}},
		{"dual-stack", testutil.PodConfig{CIDR: "10.244.1.7/24", Gateway: "10.244.1.1", IPv6: "fd00:10:244:1::7/64", GatewayV6: "fd00:10:244:1::1"}},
	} {
		t.Run(tc.name, func(t *testing.T) { sidecarUnprivileged(t, setpriv, testutil.NewPodWith(t, tc.cfg), tc.cfg.IPv6 != "") })
	}
}

func sidecarUnprivileged(t *testing.T, setpriv string, pod *testutil.Pod, dualStack bool) {
	prepare(t, pod, api.BindingMasquerade)
	sc := startSidecar(t, setpriv, pod, "virtnet-masquerade")
	sock, logs, exited := sc.sock, sc.logs, sc.exited

	c := &client{t: t, sock: sock}
	in := c.info()
	require.Equal(t, []string{"v1alpha3"}, in.GetVersions())
	var points []string
	for _, p := range in.GetHookPoints() {
		points = append(points, p.GetName())
		require.Zero(t, p.GetPriority())
	}
	require.ElementsMatch(t, []string{"OnDefineDomain", "Shutdown"}, points)

	domain, err := os.ReadFile("testdata/kubevirt-v1.9.0/domain-masquerade.xml")
	require.NoError(t, err)
	vmiJSON, err := os.ReadFile("testdata/kubevirt-v1.9.0/vmi-masquerade.json")
	require.NoError(t, err)
	out, err := c.define(domain, vmiJSON)
	require.NoError(t, err, "OnDefineDomain; sidecar log:\n%s", logs)
	validateKubeVirt(t, out)
	var dom libvirtxml.Domain
	require.NoError(t, dom.Unmarshal(string(out)))
	ifaces := dom.Devices.Interfaces
	require.Len(t, ifaces, 1, "KubeVirt's converter renders no interface for a plugin's: ours is added")
	ours := ifaces[0]
	require.Equal(t, "ua-default", ours.Alias.Name)
	require.NotNil(t, ours.Source.Ethernet)
	require.Equal(t, "tap0", ours.Target.Dev)
	require.Equal(t, "no", ours.Target.Managed)
	require.Equal(t, "virtio-non-transitional", ours.Model.Type)
	require.Equal(t, uint(pod.MTU), ours.MTU.Size)
	require.Len(t, dom.Devices.Disks, 1, "the rest of KubeVirt's domain is kept")
	require.Equal(t, names.VMMAC("8a0c6d1e-3b4f-5a6c-9d7e-1f2a3b4c5d6e", "default").String(), ours.MAC.Address,
		"masquerade: the stable MAC of the VMI's UID, the same on a migration target")

	// A second OnDefineDomain (KubeVirt calls it more than once) with our
	// interface already in the domain replaces it: still one.
	again, err := c.define(out, vmiJSON)
	require.NoError(t, err)
	var dom2 libvirtxml.Domain
	require.NoError(t, dom2.Unmarshal(string(again)))
	require.Len(t, dom2.Devices.Interfaces, 1)
	require.Equal(t, out, again, "idempotent")

	// Issue 22 item 1: a VMI from a KubeVirt newer than virtnet's schema
	// (unknown fields in spec, in an interface and in status) passes the
	// sidecar, which logs the fields; the manifest edge (api.Load) still
	// refuses it, naming each path.
	newer := newerVMI(t, vmiJSON)
	again, err = c.define(out, newer)
	require.NoError(t, err, "a newer VMI passes; sidecar log:\n%s", logs)
	require.Equal(t, out, again, "and renders the same interface")
	// The log comes through the sidecar's stderr pipe: it may land after
	// the reply.
	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), "spec.domain.devices.interfaces[0].futureNICKnob")
	}, 10*time.Second, 20*time.Millisecond, "the newer fields are logged; sidecar log:\n%s", logs)
	_, err = api.Load(newer)
	require.ErrorContains(t, err, "spec.domain.futureKnob")
	require.ErrorContains(t, err, "spec.domain.devices.interfaces[0].futureNICKnob")

	env := lease(t, vmPort(t, pod, "k6t-eth0", ours.MAC.Address))
	require.Equal(t, "10.0.2.2", env["ip"])
	require.Equal(t, "10.0.2.1", env["router"])
	require.Equal(t, "10.96.0.10", strings.TrimSpace(env["dns"]))
	if dualStack {
		require.Equal(t, 1, strings.Count(logs.String(), "router advertisements disabled, DHCPv4 and DHCPv6 keep serving"))
	}

	// PreCloudInitIso passes through.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ci, err := v1alpha3.NewCallbacksClient(c.conn()).PreCloudInitIso(ctx, &v1alpha3.PreCloudInitIsoParams{CloudInitData: []byte(`{"userData":"x"}`)})
	require.NoError(t, err)
	require.Equal(t, `{"userData":"x"}`, string(ci.GetCloudInitData()))

	_, err = v1alpha3.NewCallbacksClient(c.conn()).Shutdown(ctx, &v1alpha3.ShutdownParams{})
	require.NoError(t, err)
	select {
	case err := <-exited:
		require.NoError(t, err, "sidecar exits cleanly after Shutdown")
	case <-time.After(30 * time.Second):
		t.Fatal("sidecar still running 30 s after Shutdown")
	}
	_, err = os.Stat(sock)
	require.ErrorIs(t, err, os.ErrNotExist, "socket removed")
}
