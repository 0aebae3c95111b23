package e2e

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/kubevirt/hookapi/info"
	"github.com/virtnet/virtnet/kubevirt/hookapi/v1alpha3"
	"github.com/virtnet/virtnet/kubevirt/kvplugin/cniplugin"
	"github.com/virtnet/virtnet/kubevirt/kvplugin/sidecar"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// kubevirtTestdata holds what KubeVirt v1.9.0's own code rendered for a VMI
// whose pod network goes through binding {name: virtnet-masquerade}: the
// VMI JSON and the domain virt-launcher hands to the hook sidecars
// (provenance in that directory's README.md).
const kubevirtTestdata = "../cmd/virtnet-binding-sidecar/testdata/kubevirt-v1.9.0"

// TestGuestThroughBindingPlugins boots a real guest networked by virtnet's
// KubeVirt binding plugins alone: the CNI plugin's ADD (as Multus runs it
// for KubeVirt's binding attachment) prepares the pod, the hook sidecar,
// called over its unix socket as virt-launcher calls it, adds the
// interface to the domain KubeVirt v1.9.0's converter rendered for the VMI
// (both KubeVirt's, from kubevirtTestdata) and serves DHCP; libvirt boots
// the domain it returned (with forTCG's changes for a kernel boot under
// TCG). The guest leases 10.0.2.2 from the sidecar, pings the
// gateway, reaches the node with the pod IP as its source, and the node
// reaches the guest's port 8080 on the pod IP.
func TestGuestThroughBindingPlugins(t *testing.T) {
	assets := requireGuest(t)
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	work, err := os.MkdirTemp("", "vn-e2e-plugin-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(work) })
	run, err := os.MkdirTemp("/run", "virtnet-test-") // cacheDir must be under /run
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(run) })
	pod := testutil.NewPod(t)

	node, _ := serveSource(t, pod.Node, net.ParseIP("10.244.1.1"))

	// The binding CNI plugin, as Multus calls it for KubeVirt's binding
	// attachment of the pod network.
	conf := `{"cniVersion":"1.0.0","name":"virtnet-masquerade","type":"virtnet-binding-cni","binding":"masquerade",
		"logLevel":"warn","cacheDir":"` + filepath.Join(run, "cni") + `","args":{"cni":{"logicNetworkName":"default"}}}`
	args := &skel.CmdArgs{ContainerID: "e2e-plugin", Netns: pod.Pod.Path, IfName: "net1", StdinData: []byte(conf)}
	require.NoError(t, cniplugin.Plugin{}.Add(args), "CNI ADD")
	t.Cleanup(func() { require.NoError(t, cniplugin.Plugin{}.Del(args), "CNI DEL") })

	// The sidecar, in the pod's namespace.
	resolv := filepath.Join(work, "resolv.conf")
	require.NoError(t, os.WriteFile(resolv, []byte("nameserver 10.96.0.10\n"), 0o644))
	hooks := filepath.Join(work, "hooks")
	require.NoError(t, os.Mkdir(hooks, 0o755))
	done := make(chan error, 1)
	go func() {
		done <- sidecar.Run(ctx, sidecar.Config{SocketDir: hooks, Plugin: "virtnet-masquerade", NetNS: pod.Pod.Path, ResolvConf: resolv, Logger: log})
	}()
	sock := filepath.Join(hooks, "virtnet-masquerade.sock")
	require.Eventually(t, func() bool { _, err := os.Stat(sock); return err == nil }, 10*time.Second, 20*time.Millisecond)
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	ictx, icancel := context.WithTimeout(ctx, time.Second)
	defer icancel()
	in, err := info.NewInfoClient(conn).Info(ictx, &info.InfoParams{})
	require.NoError(t, err)
	require.Contains(t, in.GetVersions(), "v1alpha3")

	// The domain and VMI virt-launcher hands over, as KubeVirt's converter
	// rendered them.
	vmiJSON, err := os.ReadFile(filepath.Join(kubevirtTestdata, "vmi-masquerade.json"))
	require.NoError(t, err)
	in0, err := os.ReadFile(filepath.Join(kubevirtTestdata, "domain-masquerade.xml"))
	require.NoError(t, err)
	res, err := v1alpha3.NewCallbacksClient(conn).OnDefineDomain(ctx, &v1alpha3.OnDefineDomainParams{DomainXML: in0, Vmi: vmiJSON})
	require.NoError(t, err)
	var got libvirtxml.Domain
	require.NoError(t, got.Unmarshal(string(res.GetDomainXML())))
	require.Len(t, got.Devices.Interfaces, 1)
	require.Equal(t, "tap0", got.Devices.Interfaces[0].Target.Dev)

	consoleLog := filepath.Join(work, "console.log")
	initrd := filepath.Join(work, "initramfs.cpio")
	var mods []string
	for _, m := range guestModules {
		mods = append(mods, filepath.Join(assets, "modules", m+".ko"))
	}
	require.NoError(t, writeInitramfs(initrd, guestFiles{
		busybox: filepath.Join(assets, "busybox"),
		modules: mods,
		files:   guestFilesFor(guestScript{modules: mods, ping: "10.0.2.1", node: node, nocloud: true}, nil),
	}))
	// What changes for TCG and a kernel boot (forTCG: no containerDisk,
	// console to a file, no graphics), and the memory: the VMI's 128Mi
	// is too little for the Debian kernel and its initramfs.
	forTCG(&got, guestKernel(assets), initrd, consoleLog)
	got.Memory = &libvirtxml.DomainMemory{Value: 192, Unit: "MiB"}
	xml, err := got.Marshal()
	require.NoError(t, err)
	domainXML := filepath.Join(work, "domain.xml")
	require.NoError(t, os.WriteFile(domainXML, []byte(xml), 0o644))

	v := startVirtQemuRun(t, filepath.Join(work, "libvirt"), domainXML, pod.Pod.Path)
	c := &console{path: consoleLog}
	t.Cleanup(func() {
		if t.Failed() {
			_ = c.poll()
			t.Logf("guest console:\n%s", strings.Join(c.lines, "\n"))
		}
	})
	line, err := c.waitFor(ctx, v, "lease", "lease-failed")
	require.NoError(t, err)
	t.Logf("guest: %s", line)
	require.Contains(t, line, "lease ip=10.0.2.2 mask=24 router=10.0.2.1")
	require.Contains(t, line, "dns=10.96.0.10")
	require.Contains(t, line, "mtu=1440")
	line, err = c.waitFor(ctx, v, "ping-ok", "ping-failed")
	require.NoError(t, err)
	require.Regexp(t, `^ping-ok 3 packets transmitted, 3 packets received`, line)
	line, err = c.waitFor(ctx, v, "source")
	require.NoError(t, err)
	require.Equal(t, "source 10.244.1.7", strings.Fields(line)[0]+" "+strings.Fields(line)[1])
	_, err = c.waitFor(ctx, v, "listening")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		var got []byte
		err := pod.Node.Do(func() error {
			conn, err := net.DialTimeout("tcp4", "10.244.1.7:8080", 2*time.Second)
			if err != nil {
				return err
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
			got, err = io.ReadAll(conn)
			return err
		})
		return err == nil && strings.HasPrefix(strings.TrimSpace(string(got)), "hello from")
	}, 30*time.Second, time.Second, "the node must reach the guest on 10.244.1.7:8080 (all ports forwarded)")

	sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
	defer scancel()
	_, err = v1alpha3.NewCallbacksClient(conn).Shutdown(sctx, &v1alpha3.ShutdownParams{})
	require.NoError(t, err)
	select {
	case err := <-done:
		require.NoError(t, err, "the sidecar ends after Shutdown")
	case <-ctx.Done():
		t.Fatal("sidecar still running after Shutdown")
	}
}
