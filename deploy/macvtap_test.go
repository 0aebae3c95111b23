//go:build linux

package deploy

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/virtnet/virtnet/macvtap/cniconfig"
	"github.com/virtnet/virtnet/macvtap/deviceplugin"
	"github.com/virtnet/virtnet/macvtap/dpserver"
)

var (
	//go:embed macvtap.yaml
	macvtapYAML []byte
	//go:embed Containerfile.macvtap
	macvtapContainerfile []byte
)

type meta struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type mount struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
}

type container struct {
	Name    string   `json:"name"`
	Image   string   `json:"image"`
	Command []string `json:"command"`
	EnvFrom []struct {
		ConfigMapRef struct {
			Name string `json:"name"`
		} `json:"configMapRef"`
	} `json:"envFrom,omitempty"`
	Resources       json.RawMessage `json:"resources,omitempty"`
	SecurityContext struct {
		Privileged bool `json:"privileged,omitempty"`
		RunAsUser  *int `json:"runAsUser,omitempty"`
	} `json:"securityContext"`
	VolumeMounts []mount `json:"volumeMounts"`
}

// TestMacvtapManifests: deploy/macvtap.yaml against the code it
// configures. The ConfigMap's DP_MACVTAP_CONF parses and is what the
// DaemonSet's daemon reads; the daemon sees the kubelet's device-plugin
// directory and pod-resources socket at the paths the v1beta1 API and
// dpserver name, on the host network, privileged; the init container
// installs the CNI plugin as "macvtap" (the image's script, from
// Containerfile.macvtap); the NetworkAttachmentDefinition requests a
// configured resource and its config, with the deviceID Multus adds, is
// one the CNI plugin accepts; the example VM uses that network through the
// macvtap binding.
func TestMacvtapManifests(t *testing.T) {
	docs := bytes.Split(macvtapYAML, []byte("\n---\n"))
	require.Len(t, docs, 4)

	var cm struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Metadata   meta              `json:"metadata"`
		Data       map[string]string `json:"data"`
	}
	strict(t, "ConfigMap", docs[0], &cm)
	require.Equal(t, "ConfigMap", cm.Kind)
	resources, err := deviceplugin.ParseConfig([]byte(cm.Data[deviceplugin.ConfigEnv]))
	require.NoError(t, err)
	require.NotEmpty(t, resources)
	names := map[string]bool{}
	for _, r := range resources {
		names[r.ResourceName()] = true
	}

	var ds struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   meta   `json:"metadata"`
		Spec       struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			Template struct {
				Metadata meta `json:"metadata"`
				Spec     struct {
					PriorityClassName string           `json:"priorityClassName"`
					Tolerations       []map[string]any `json:"tolerations"`
					HostNetwork       bool             `json:"hostNetwork"`
					InitContainers    []container      `json:"initContainers"`
					Containers        []container      `json:"containers"`
					Volumes           []struct {
						Name     string `json:"name"`
						HostPath struct {
							Path string `json:"path"`
							Type string `json:"type"`
						} `json:"hostPath"`
					} `json:"volumes"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	strict(t, "DaemonSet", docs[1], &ds)
	require.Equal(t, "DaemonSet", ds.Kind)
	require.Equal(t, ds.Spec.Selector.MatchLabels, ds.Spec.Template.Metadata.Labels)
	pod := ds.Spec.Template.Spec
	require.True(t, pod.HostNetwork, "the lower devices are the host's links")
	hostPaths := map[string]string{}
	for _, v := range pod.Volumes {
		hostPaths[v.Name] = v.HostPath.Path
	}
	mountsOf := func(c container) map[string]string {
		out := map[string]string{}
		for _, m := range c.VolumeMounts {
			require.Equal(t, hostPaths[m.Name], strings.TrimPrefix(m.MountPath, "/host"), "%s mounts %s at its host path", c.Name, m.Name)
			out[m.MountPath] = m.Name
		}
		return out
	}
	require.Len(t, pod.Containers, 1)
	dp := pod.Containers[0]
	require.Equal(t, []string{"/virtnet-macvtap-dp"}, dp.Command, "the daemon with its default flags")
	require.True(t, dp.SecurityContext.Privileged)
	require.Len(t, dp.EnvFrom, 1)
	require.Equal(t, cm.Metadata.Name, dp.EnvFrom[0].ConfigMapRef.Name)
	require.Equal(t, ds.Metadata.Namespace, cm.Metadata.Namespace)
	dpMounts := mountsOf(dp)
	require.Contains(t, dpMounts, strings.TrimSuffix(pluginapi.DevicePluginPath, "/"))
	require.Contains(t, dpMounts, filepath.Dir(dpserver.DefaultPodResourcesSocket))
	require.Len(t, pod.InitContainers, 1)
	install := pod.InitContainers[0]
	require.Equal(t, dp.Image, install.Image)
	require.Equal(t, []string{"/install-cni"}, install.Command)
	require.Contains(t, mountsOf(install), "/host/opt/cni/bin")
	require.True(t, install.SecurityContext.Privileged, "SELinux refuses an unprivileged container's writes to the host's /opt/cni/bin")

	cf := string(macvtapContainerfile)
	require.Contains(t, cf, "go build -trimpath -o /out/virtnet-macvtap-dp ./cmd/virtnet-macvtap-dp")
	require.Contains(t, cf, "go build -trimpath -o /out/macvtap ./cmd/macvtap-cni")
	require.Contains(t, cf, `mv /host/opt/cni/bin/.macvtap.new /host/opt/cni/bin/macvtap\n`)

	var n struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   meta   `json:"metadata"`
		Spec       struct {
			Config string `json:"config"`
		} `json:"spec"`
	}
	strict(t, "NetworkAttachmentDefinition", docs[2], &n)
	res := n.Metadata.Annotations["k8s.v1.cni.cncf.io/resourceName"]
	require.True(t, names[res], "the NAD requests %q, a resource of the ConfigMap (%v)", res, names)
	var cfg map[string]any
	require.NoError(t, json.Unmarshal([]byte(n.Spec.Config), &cfg))
	cfg["deviceID"] = strings.TrimPrefix(res, "macvtap.network.kubevirt.io/") + "Mvp0" // as Multus adds it
	withID, err := json.Marshal(cfg)
	require.NoError(t, err)
	c, err := cniconfig.Parse(withID)
	require.NoError(t, err)
	require.Equal(t, n.Metadata.Name, c.Name)

	var vm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   meta   `json:"metadata"`
		Spec       struct {
			RunStrategy string `json:"runStrategy"`
			Template    struct {
				Spec struct {
					Domain struct {
						Devices struct {
							Interfaces []struct {
								Name    string `json:"name"`
								Binding struct {
									Name string `json:"name"`
								} `json:"binding"`
							} `json:"interfaces"`
							Disks []map[string]any `json:"disks"`
						} `json:"devices"`
						Resources map[string]any `json:"resources"`
					} `json:"domain"`
					Networks []struct {
						Name   string `json:"name"`
						Multus struct {
							NetworkName string `json:"networkName"`
						} `json:"multus"`
					} `json:"networks"`
					Volumes []map[string]any `json:"volumes"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	strict(t, "VirtualMachine", docs[3], &vm)
	spec := vm.Spec.Template.Spec
	require.Len(t, spec.Networks, 1)
	require.Equal(t, n.Metadata.Name, spec.Networks[0].Multus.NetworkName)
	require.Equal(t, fmt.Sprint(spec.Networks[0].Name), spec.Domain.Devices.Interfaces[0].Name)
	require.Equal(t, "macvtap", spec.Domain.Devices.Interfaces[0].Binding.Name)
}
