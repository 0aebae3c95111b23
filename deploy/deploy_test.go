//go:build linux

// Package deploy holds the manifests of virtnet's KubeVirt 1.x binding
// plugins; its tests check them against the code they configure.
package deploy

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/internal/names"
	"github.com/virtnet/virtnet/kubevirt/kvplugin"
	"github.com/virtnet/virtnet/kubevirt/kvplugin/cniplugin"
	"github.com/virtnet/virtnet/kubevirt/kvplugin/sidecar"
	"github.com/virtnet/virtnet/testrig/kernelvm"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// The manifests, embedded so that the tests delegated to the kernel VM
// (which sees no host files) have them.
var (
	//go:embed sidecars/kubevirt-cr.yaml
	kubevirtCR []byte
	//go:embed cni/network-attachment-definitions.yaml
	nads []byte
	//go:embed vm-example.yaml
	vmExample []byte
	//go:embed cni/cni-daemonset.yaml
	cniDaemonSet []byte
	//go:embed Containerfile
	containerfile []byte
)

// bindingPlugin has exactly the fields of KubeVirt v1.9.0's
// InterfaceBindingPlugin (staging/src/kubevirt.io/api/core/v1/types.go).
type bindingPlugin struct {
	SidecarImage                string `json:"sidecarImage,omitempty"`
	NetworkAttachmentDefinition string `json:"networkAttachmentDefinition,omitempty"`
	DomainAttachmentType        string `json:"domainAttachmentType,omitempty"`
	Migration                   *struct {
		Method string `json:"method"`
	} `json:"migration,omitempty"`
	DownwardAPI             string          `json:"downwardAPI,omitempty"`
	ComputeResourceOverhead json.RawMessage `json:"computeResourceOverhead,omitempty"`
}

func strict(t *testing.T, what string, b []byte, v any) {
	t.Helper()
	j, err := yaml.YAMLToJSON(b)
	require.NoError(t, err, what)
	d := json.NewDecoder(bytes.NewReader(j))
	d.DisallowUnknownFields()
	require.NoError(t, d.Decode(v), what)
}

func registeredPlugins(t *testing.T) map[string]bindingPlugin {
	var cr struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
		Spec struct {
			Configuration struct {
				Network struct {
					Binding map[string]bindingPlugin `json:"binding"`
				} `json:"network"`
			} `json:"configuration"`
		} `json:"spec"`
	}
	strict(t, "kubevirt-cr.yaml", kubevirtCR, &cr)
	require.Equal(t, "kubevirt.io/v1", cr.APIVersion)
	require.Equal(t, "KubeVirt", cr.Kind)
	return cr.Spec.Configuration.Network.Binding
}

type nad struct {
	Name, Namespace string
	Config          map[string]any
	Raw             string
}

func loadNADs(t *testing.T) map[string]nad {
	out := map[string]nad{}
	for i, doc := range bytes.Split(nads, []byte("\n---\n")) {
		var n struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
			Spec struct {
				Config string `json:"config"`
			} `json:"spec"`
		}
		strict(t, fmt.Sprintf("network-attachment-definitions.yaml document %d", i), doc, &n)
		require.Equal(t, "k8s.cni.cncf.io/v1", n.APIVersion)
		require.Equal(t, "NetworkAttachmentDefinition", n.Kind)
		var cfg map[string]any
		require.NoError(t, json.Unmarshal([]byte(n.Spec.Config), &cfg), "NAD %s config", n.Metadata.Name)
		out[n.Metadata.Namespace+"/"+n.Metadata.Name] = nad{Name: n.Metadata.Name, Namespace: n.Metadata.Namespace, Config: cfg, Raw: n.Spec.Config}
	}
	return out
}

// TestManifests: the KubeVirt CR excerpt has only fields of KubeVirt
// v1.9.0's binding plugin registration; each name is one the sidecar
// serves, with link-refresh migration (v1.9.0's only method) where the
// VM keeps its address on the target, no domainAttachmentType (the
// sidecar renders the interface itself; with "tap" KubeVirt would render
// one too) and, for bridge and masquerade, a NetworkAttachmentDefinition
// of the file next to it whose CNI type is the binary the DaemonSet
// installs and whose binding is the plugin's; the example VM resolves to
// the registered plugins on eth0 and pod<hash>; the sidecar image sets
// the fallback plugin name, runs as 107 and is started without arguments.
func TestManifests(t *testing.T) {
	plugins := registeredPlugins(t)
	all := loadNADs(t)
	require.ElementsMatch(t, []string{kvplugin.PluginBridge, kvplugin.PluginMasquerade, kvplugin.PluginSlirp}, keys(plugins))
	for name, p := range plugins {
		method, err := kvplugin.MethodFor(name)
		require.NoError(t, err)
		require.NotEmpty(t, p.SidecarImage, name)
		require.Empty(t, p.DomainAttachmentType, name)
		if method == api.BindingBridge {
			require.Nil(t, p.Migration, "%s: the VM owns the pod IP, no migration", name)
		} else {
			require.NotNil(t, p.Migration, name)
			require.Equal(t, "link-refresh", p.Migration.Method, name)
		}
		if method == api.BindingSlirp {
			require.Empty(t, p.NetworkAttachmentDefinition, "%s: nothing to prepare in the pod", name)
			continue
		}
		n, ok := all[p.NetworkAttachmentDefinition]
		require.True(t, ok, "%s: NAD %q is in network-attachment-definitions.yaml", name, p.NetworkAttachmentDefinition)
		require.Equal(t, "virtnet-binding-cni", n.Config["type"], name)
		require.Equal(t, "1.0.0", n.Config["cniVersion"], name)
		require.Equal(t, method, n.Config["binding"], name)
	}
	require.Contains(t, string(cniDaemonSet), "{name: cnibin, mountPath: /host/opt/cni/bin}")
	require.Contains(t, string(cniDaemonSet), "hostPath: {path: /opt/cni/bin")
	require.Contains(t, string(containerfile), "/host/opt/cni/bin/virtnet-binding-cni\\n")

	// The example VM's template as the VMI virt-launcher gets.
	var vm struct {
		Spec struct {
			Template struct {
				Spec json.RawMessage `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	j, err := yaml.YAMLToJSON(vmExample)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(j, &vm))
	vmi := fmt.Sprintf(`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"vm-virtnet","namespace":"default","uid":"d0d0d0d0-0000-4000-8000-000000000001"},"spec":%s}`, vm.Spec.Template.Spec)
	res, err := kvplugin.Resolve([]byte(vmi), func(n string) (string, bool) {
		if _, ok := plugins[n]; !ok {
			return "", false
		}
		m, err := kvplugin.MethodFor(n)
		return m, err == nil
	})
	require.NoError(t, err)
	got := map[string]string{}
	for _, p := range res.Pairs {
		got[p.Interface.Name] = p.Binding() + " on " + p.PodInterface
	}
	require.Equal(t, map[string]string{"default": "masquerade on eth0", "blue": "bridge on " + api.HashedPodInterface("blue")}, got)

	cf := string(containerfile)
	require.Contains(t, cf, "ENV "+sidecar.EnvVirtnetPluginName+"=${BINDING:+virtnet-${BINDING}}")
	require.Contains(t, cf, "USER 107:107")
	require.Contains(t, cf, `ENTRYPOINT ["/virtnet-binding-sidecar"]`)
	require.NotContains(t, cf, "\nCMD", "KubeVirt starts a binding plugin's sidecar without arguments: the defaults are the in-pod paths")
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// attach runs the NAD's own configuration through the CNI plugin as
// Multus runs it for KubeVirt's binding attachment: its config with
// cni-args {"logicNetworkName": "default"} as args.cni, ifname net1, on a
// pod whose eth0 is the pod network; ADD, CHECK, ADD again, DEL, DEL again.
func attach(t *testing.T, n nad, method string) {
	pod := testutil.NewPod(t)
	cfg := map[string]any{}
	for k, v := range n.Config {
		cfg[k] = v
	}
	cfg["args"] = map[string]any{"cni": map[string]any{"logicNetworkName": "default"}}
	run, err := os.MkdirTemp("/run", "virtnet-test-") // cacheDir must be under /run
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(run) })
	cfg["cacheDir"] = filepath.Join(run, "cache") // the only addition: not the node's directory
	conf, err := json.Marshal(cfg)
	require.NoError(t, err)
	args := &skel.CmdArgs{ContainerID: "deploy-" + method, Netns: pod.Pod.Path, IfName: "net1", StdinData: conf}
	stdout := os.Stdout
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	require.NoError(t, err)
	defer devnull.Close()
	os.Stdout = devnull // ADD prints its result
	defer func() { os.Stdout = stdout }()
	require.NoError(t, cniplugin.Plugin{}.Add(args), "ADD")
	src, err := kvplugin.ReadRecord(pod.Pod.Path, method, "eth0", true)
	require.NoError(t, err, "the sidecar's hand-off record")
	require.Equal(t, names.Tap("eth0", true), src.Link)
	require.NoError(t, cniplugin.Plugin{}.Check(args), "CHECK")
	require.NoError(t, cniplugin.Plugin{}.Add(args), "ADD again")
	require.NoError(t, cniplugin.Plugin{}.Del(args), "DEL")
	require.NoError(t, cniplugin.Plugin{}.Del(args), "DEL again")
	_, err = kvplugin.ReadRecord(pod.Pod.Path, method, "eth0", true)
	require.Error(t, err, "no record after DEL")
}

// TestMasqueradeNAD: deploy/'s virtnet-masquerade NAD through the CNI
// plugin on a pod.
func TestMasqueradeNAD(t *testing.T) {
	testutil.RequireRoot(t)
	attach(t, loadNADs(t)["default/virtnet-masquerade"], api.BindingMasquerade)
}

// TestBridgeNADInVM: deploy/'s virtnet-bridge NAD through the CNI plugin
// on a pod (a dummy takes eth0's place: inside the kernel VM here).
func TestBridgeNADInVM(t *testing.T) {
	testutil.SkipCoveredUnderRace(t, "a kernel VM test; the plugin a NAD selects runs under -race on this kernel in cmd/virtnet-binding-cni's TestMasqueradeThroughLibcni")
	if kernelvm.DelegateWith(t, kernelvm.Options{Needs: []string{"dummy", "bridge", "veth", "tun"},
		QEMUArgs: []string{"-cpu", "qemu64,+rdrand"}}) {
		return
	}
	testutil.RequireRoot(t)
	attach(t, loadNADs(t)["default/virtnet-bridge"], api.BindingBridge)
}
