//go:build linux

package deploy

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"sigs.k8s.io/yaml"

	"github.com/virtnet/virtnet/testrig/testutil"
)

// multus40Versions are the CNI versions Multus v4.0.x accepts in a NAD:
// what its libcni (containernetworking/cni v1.1.2, pkg/version's All)
// knows. Multus v4.1.0 moved to v1.2.0-rc1, which adds 1.1.0; Multus 3.x
// stops at 0.4.0 and is not supported.
var multus40Versions = []string{"0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0"}

// deployNADs returns every NetworkAttachmentDefinition in deploy/'s
// files, by file and name, with its config.
func deployNADs(t *testing.T) map[string]string {
	out := map[string]string{}
	for _, f := range []string{"cni/network-attachment-definitions.yaml", "example-network.yaml", "macvtap.yaml"} {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, doc := range splitDocs(b) {
			kind, obj, err := decodeObject(doc)
			require.NoError(t, err, f)
			if kind == "NetworkAttachmentDefinition" {
				n := obj.(*nadObject)
				out[f+": "+n.ObjectMeta.Name] = n.Spec.Config
			}
		}
	}
	require.Len(t, out, 4)
	return out
}

// TestNADVersionsMultus: every NAD deploy/ ships takes a cniVersion Multus
// v4.0 accepts (the macvtap NAD said 1.1.0, which Multus v4.0's libcni
// refuses).
func TestNADVersionsMultus(t *testing.T) {
	for name, cfg := range deployNADs(t) {
		var c struct {
			CNIVersion string `json:"cniVersion"`
		}
		require.NoError(t, json.Unmarshal([]byte(cfg), &c), name)
		require.Contains(t, multus40Versions, c.CNIVersion, "%s: cniVersion %s is refused by Multus v4.0", name, c.CNIVersion)
	}
}

// TestExampleVMNamespaces: each example VM names its namespace, the one
// its Multus networks are defined in (a VM applied to another namespace
// would find no network of that name).
func TestExampleVMNamespaces(t *testing.T) {
	nads := map[string]bool{}
	for _, f := range []string{"example-network.yaml", "macvtap.yaml"} {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, doc := range splitDocs(b) {
			var o struct {
				Kind     string
				Metadata struct{ Name, Namespace string }
			}
			require.NoError(t, yaml.Unmarshal(doc, &o))
			if o.Kind == "NetworkAttachmentDefinition" {
				nads[o.Metadata.Namespace+"/"+o.Metadata.Name] = true
			}
		}
	}
	vms := 0
	for _, f := range []string{"vm-example.yaml", "macvtap.yaml"} {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, doc := range splitDocs(b) {
			var vm struct {
				Kind     string
				Metadata struct{ Name, Namespace string }
				Spec     struct {
					Template struct {
						Spec struct {
							Networks []struct {
								Multus *struct {
									NetworkName string `json:"networkName"`
								} `json:"multus"`
							} `json:"networks"`
						} `json:"spec"`
					} `json:"template"`
				} `json:"spec"`
			}
			require.NoError(t, yaml.Unmarshal(doc, &vm))
			if vm.Kind != "VirtualMachine" {
				continue
			}
			vms++
			require.NotEmpty(t, vm.Metadata.Namespace, "%s: VM %s names no namespace", f, vm.Metadata.Name)
			for _, n := range vm.Spec.Template.Spec.Networks {
				if n.Multus == nil {
					continue
				}
				key := n.Multus.NetworkName
				if !strings.Contains(key, "/") {
					key = vm.Metadata.Namespace + "/" + key
				}
				require.True(t, nads[key], "%s: VM %s/%s: network %s is not defined in deploy/", f, vm.Metadata.Namespace, vm.Metadata.Name, key)
			}
		}
	}
	require.Equal(t, 2, vms)
}

// strayGateways adds the NAD's configuration (host-local's state in a
// temporary directory, the only change) to a pod on a node, both network
// namespaces made here, with the reference plugins, and returns the pod's
// routes whose gateway no address of the node or the pod holds.
func strayGateways(t *testing.T, config string) []netlink.Route {
	var cfg map[string]any
	require.NoError(t, json.Unmarshal([]byte(config), &cfg))
	cfg["ipam"].(map[string]any)["dataDir"] = t.TempDir()
	b, err := json.Marshal(cfg)
	require.NoError(t, err)
	conf, err := libcni.NetworkPluginConfFromBytes(b)
	require.NoError(t, err)

	node := testutil.NewNS(t, "node")
	pod := testutil.NewNS(t, "pod")
	cni := libcni.NewCNIConfig([]string{testutil.CNIPluginDir(t)}, nil)
	rt := &libcni.RuntimeConf{ContainerID: "deploy-example-network", NetNS: pod.Path, IfName: "net1"}
	require.NoError(t, node.Do(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := cni.AddNetwork(ctx, conf, rt)
		return err
	}))
	t.Cleanup(func() {
		_ = node.Do(func() error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			return cni.DelNetwork(ctx, conf, rt)
		})
	})

	var held []net.IP
	for _, ns := range []*testutil.NS{node, pod} {
		addrs, err := ns.Handle.AddrList(nil, netlink.FAMILY_ALL)
		require.NoError(t, err)
		for _, a := range addrs {
			held = append(held, a.IP)
		}
	}
	routes, err := pod.Handle.RouteList(nil, netlink.FAMILY_V4)
	require.NoError(t, err)
	require.NotEmpty(t, routes)
	var stray []netlink.Route
	for _, r := range routes {
		if r.Gw != nil && !slices.ContainsFunc(held, r.Gw.Equal) {
			stray = append(stray, r)
		}
	}
	return stray
}

// TestExampleNetworkRoutes: deploy/example-network.yaml's network, made by
// the CNI bridge and host-local plugins it names, leaves the pod no route
// through an address nobody holds. Its route without "gw" became
// "192.168.50.0/24 via 192.168.50.1" (host-local's gateway; the bridge is
// not the gateway): the first case shows this test sees that.
func TestExampleNetworkRoutes(t *testing.T) {
	testutil.RequireRoot(t)
	b, err := os.ReadFile("example-network.yaml")
	require.NoError(t, err)
	_, obj, err := decodeObject(b)
	require.NoError(t, err)
	config := obj.(*nadObject).Spec.Config

	t.Run("route without gw", func(t *testing.T) {
		var cfg map[string]any
		require.NoError(t, json.Unmarshal([]byte(config), &cfg))
		cfg["ipam"].(map[string]any)["routes"] = []any{map[string]any{"dst": "192.168.50.0/24"}}
		old, err := json.Marshal(cfg)
		require.NoError(t, err)
		stray := strayGateways(t, string(old))
		require.Len(t, stray, 1)
		require.Equal(t, "192.168.50.1", stray[0].Gw.String())
	})
	t.Run("example-network.yaml", func(t *testing.T) {
		require.Empty(t, strayGateways(t, config))
	})
}

// goModGo is go.mod's go line.
func goModGo(t *testing.T) string {
	b, err := os.ReadFile("../go.mod")
	require.NoError(t, err)
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "go "); ok {
			return v
		}
	}
	t.Fatal("go.mod has no go line")
	return ""
}

// TestGoImageMatchesGoMod: the Containerfiles build with the Go of
// go.mod's go line, named to the patch release: the golang image sets
// GOTOOLCHAIN=local, so golang:1.26 (whatever 1.26.x it is when pulled, or
// what a cache holds) refuses a go.mod that asks for a later 1.26.x.
func TestGoImageMatchesGoMod(t *testing.T) {
	want := goModGo(t)
	require.Regexp(t, `^\d+\.\d+\.\d+$`, want)
	for _, f := range []string{"Containerfile", "Containerfile.macvtap"} {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var image string
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "ARG GO_IMAGE="); ok {
				image = v
			}
		}
		require.NotEmpty(t, image, "%s: no ARG GO_IMAGE", f)
		_, tag, ok := strings.Cut(image, "golang:")
		require.True(t, ok, "%s: %s", f, image)
		version, _, _ := strings.Cut(tag, "-")
		require.Equal(t, want, version, "%s: %s is not go.mod's Go %s", f, image, want)
	}
}
