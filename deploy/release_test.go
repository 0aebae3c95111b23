//go:build linux

package deploy

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/virtnet/virtnet/testrig/typecheck"
)

// release is the newest version CHANGELOG.md names ("## v0.1.0 — …").
func release(t *testing.T) string {
	b, err := os.ReadFile("../CHANGELOG.md")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^## (v\d+\.\d+\.\d+)\b`).FindSubmatch(b)
	require.NotNil(t, m, "CHANGELOG.md has no release heading")
	return string(m[1])
}

type kustomization struct {
	APIVersion     string   `json:"apiVersion"`
	Kind           string   `json:"kind"`
	Resources      []string `json:"resources"`
	Components     []string `json:"components"`
	Configurations []string `json:"configurations"`
	Images         []struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
	} `json:"images"`
	Patches []struct {
		Target map[string]string `json:"target"`
		Patch  string            `json:"patch"`
	} `json:"patches"`
}

func loadKustomization(t *testing.T, path string) kustomization {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var k kustomization
	strict(t, path, b, &k)
	if k.Kind == "Component" {
		require.Equal(t, "kustomize.config.k8s.io/v1alpha1", k.APIVersion)
	} else {
		require.Equal(t, "kustomize.config.k8s.io/v1beta1", k.APIVersion)
		require.Equal(t, "Kustomization", k.Kind)
	}
	return k
}

// TestKustomization: deploy/ applies in two steps, deploy/sidecars (the
// KubeVirt CR) then deploy/cni (the installer and the NADs), both taking
// the images of deploy/images; every image their resources name (the
// installer's and the CR's sidecar images) is pinned to the release of
// CHANGELOG.md and listed under images: to be overridden, the CR's
// sidecarImage fields through kustomizeconfig.yaml.
func TestKustomization(t *testing.T) {
	images := loadKustomization(t, "images/kustomization.yaml")
	require.Equal(t, "Component", images.Kind)
	require.Empty(t, images.Resources)
	steps := map[string][]string{
		"sidecars": {"kubevirt-cr.yaml"},
		"cni":      {"cni-daemonset.yaml", "network-attachment-definitions.yaml"},
	}
	var resources []string
	for dir, want := range steps {
		k := loadKustomization(t, dir+"/kustomization.yaml")
		require.ElementsMatch(t, want, k.Resources, dir)
		require.Equal(t, []string{"../images"}, k.Components, dir)
		require.Empty(t, k.Images, "%s: images are deploy/images' alone", dir)
		for _, r := range k.Resources {
			resources = append(resources, dir+"/"+r)
		}
	}
	rel := release(t)
	overridable := map[string]string{}
	for _, im := range images.Images {
		require.Equal(t, rel, im.NewTag, im.Name)
		overridable[im.Name] = im.NewTag
	}
	imageRE := regexp.MustCompile(`(?m)^\s+(image|sidecarImage): (\S+)$`)
	seen := map[string]bool{}
	for _, r := range resources {
		b, err := os.ReadFile(r)
		require.NoError(t, err)
		for _, m := range imageRE.FindAllStringSubmatch(string(b), -1) {
			name, tag, ok := strings.Cut(m[2], ":v")
			require.True(t, ok, "%s: %s is not pinned to a release", r, m[2])
			require.Equal(t, rel, "v"+tag, "%s: %s", r, m[2])
			require.Contains(t, overridable, name, "%s: %s cannot be overridden", r, m[2])
			seen[name] = true
		}
	}
	require.Len(t, seen, len(overridable), "an image under images: that no resource uses")

	// Every image of virtnet's own in deploy/, in a kustomization or
	// not (deploy/macvtap.yaml), carries the release.
	var all []string
	require.NoError(t, filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".yaml") {
			all = append(all, p)
		}
		return err
	}))
	for _, f := range all {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range imageRE.FindAllStringSubmatch(string(b), -1) {
			if strings.HasPrefix(m[2], "registry.example.org/virtnet/") {
				require.True(t, strings.HasSuffix(m[2], ":"+rel), "%s: %s is not pinned to %s", f, m[2], rel)
			}
		}
	}

	var cfg struct {
		Images []struct {
			Path string `json:"path"`
			Kind string `json:"kind"`
		} `json:"images"`
	}
	b, err := os.ReadFile("images/kustomizeconfig.yaml")
	require.NoError(t, err)
	strict(t, "images/kustomizeconfig.yaml", b, &cfg)
	var paths []string
	for _, f := range cfg.Images {
		require.Equal(t, "KubeVirt", f.Kind)
		paths = append(paths, f.Path)
	}
	var want []string
	for name := range registeredPlugins(t) {
		want = append(want, "spec/configuration/network/binding/"+name+"/sidecarImage")
	}
	require.ElementsMatch(t, want, paths)
	require.Equal(t, []string{"kustomizeconfig.yaml"}, images.Configurations)
}

// TestVersionMatrix: what docs/kubevirt-1x.md's matrix says each KubeVirt
// release needs. 1.1–1.4: the NetworkBindingPlugins feature gate (GA in
// 1.5; KubeVirt's pkg/virt-config), added by a JSON patch that keeps the
// gates already set. 1.1: no migration field in the binding registration
// (added in 1.2), which the 1.1 overlay removes wherever the CR has one.
func TestVersionMatrix(t *testing.T) {
	var gate []map[string]any
	b, err := os.ReadFile("feature-gate-1.1-1.4.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &gate))
	require.Equal(t, []map[string]any{{"op": "add", "path": "/spec/configuration/developerConfiguration/featureGates/-", "value": "NetworkBindingPlugins"}}, gate)

	k := loadKustomization(t, "kubevirt-1.1/kustomization.yaml")
	require.Equal(t, []string{"../sidecars"}, k.Resources)
	require.Len(t, k.Patches, 1)
	require.Equal(t, "KubeVirt", k.Patches[0].Target["kind"])
	var ops []struct {
		Op, Path string
	}
	require.NoError(t, yaml.Unmarshal([]byte(k.Patches[0].Patch), &ops))
	var removed []string
	for _, op := range ops {
		require.Equal(t, "remove", op.Op)
		removed = append(removed, op.Path)
	}
	var want []string
	for name, p := range registeredPlugins(t) {
		if p.Migration != nil {
			want = append(want, "/spec/configuration/network/binding/"+name+"/migration")
		}
	}
	require.ElementsMatch(t, want, removed)
}

// TestExampleNetworks: every Multus network deploy/vm-example.yaml attaches
// to is defined in deploy/ (example-network.yaml), as a configuration
// libcni loads.
func TestExampleNetworks(t *testing.T) {
	var vm struct {
		Metadata struct {
			Namespace string `json:"namespace"`
		} `json:"metadata"`
		Spec struct {
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
	require.NoError(t, yaml.Unmarshal(vmExample, &vm))
	defined := map[string]string{}
	b, err := os.ReadFile("example-network.yaml")
	require.NoError(t, err)
	var n struct {
		Metadata struct{ Name, Namespace string } `json:"metadata"`
		Spec     struct {
			Config string `json:"config"`
		} `json:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(b, &n))
	defined[n.Metadata.Namespace+"/"+n.Metadata.Name] = n.Spec.Config
	ns := vm.Metadata.Namespace
	if ns == "" {
		ns = "default"
	}
	found := 0
	for _, net := range vm.Spec.Template.Spec.Networks {
		if net.Multus == nil {
			continue
		}
		key := net.Multus.NetworkName
		if !strings.Contains(key, "/") {
			key = ns + "/" + key
		}
		cfg, ok := defined[key]
		require.True(t, ok, "network %s is not defined in deploy/", key)
		conf, err := libcni.NetworkPluginConfFromBytes([]byte(cfg))
		require.NoError(t, err, key)
		require.Equal(t, net.Multus.NetworkName, conf.Network.Name)
		found++
	}
	require.NotZero(t, found)
}

// TestInstallerPrivileged: the CNI installer writes the host's
// /opt/cni/bin, which SELinux refuses to an unprivileged container
// (container_t) whatever its uid: it is a privileged init container. The
// container that keeps the pod running afterwards has no privilege at all.
func TestInstallerPrivileged(t *testing.T) {
	var ds struct {
		Spec struct {
			Template struct {
				Spec struct {
					InitContainers []struct {
						Command         []string `json:"command"`
						SecurityContext struct {
							Privileged *bool `json:"privileged"`
						} `json:"securityContext"`
					} `json:"initContainers"`
					Containers []struct {
						SecurityContext struct {
							Privileged               *bool `json:"privileged"`
							RunAsNonRoot             *bool `json:"runAsNonRoot"`
							AllowPrivilegeEscalation *bool `json:"allowPrivilegeEscalation"`
							Capabilities             struct {
								Drop []string `json:"drop"`
							} `json:"capabilities"`
						} `json:"securityContext"`
						VolumeMounts []any `json:"volumeMounts"`
					} `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(cniDaemonSet, &ds))
	spec := ds.Spec.Template.Spec
	require.Len(t, spec.InitContainers, 1)
	require.Equal(t, []string{"/install-cni"}, spec.InitContainers[0].Command)
	p := spec.InitContainers[0].SecurityContext.Privileged
	require.True(t, p != nil && *p)
	require.Len(t, spec.Containers, 1)
	sc := spec.Containers[0].SecurityContext
	require.Nil(t, sc.Privileged)
	require.True(t, sc.RunAsNonRoot != nil && *sc.RunAsNonRoot)
	require.True(t, sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation)
	require.Equal(t, []string{"ALL"}, sc.Capabilities.Drop)
	require.Empty(t, spec.Containers[0].VolumeMounts, "the waiting container needs no host directory")
}

// TestImagesEveryArch: the images' binaries build for amd64 and arm64 as
// the Containerfile builds them (cross-compiled on the build platform, no
// cgo: arm64 type-checked from source), and the Containerfile builds that
// way.
func TestImagesEveryArch(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles the images' binaries for two architectures (-short)")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command")
	}
	for _, cf := range []string{string(containerfile), string(macvtapContainerfile)} {
		require.Contains(t, cf, "FROM --platform=$BUILDPLATFORM")
		require.Contains(t, cf, "GOARCH=$TARGETARCH")
		require.Contains(t, cf, `org.opencontainers.image.version="${VERSION}"`)
		for _, stage := range strings.Split(cf, "\nFROM ")[1:] {
			if strings.Contains(strings.SplitN(stage, "\n", 2)[0], " AS build") {
				continue
			}
			require.NotRegexp(t, `(?m)^RUN `, stage, "a RUN in a target stage needs the target's architecture (emulation)")
		}
	}
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	// amd64 is what every other test builds; arm64 is the other image,
	// type-checked from source with its build constraints (a pure Go
	// program that type-checks for a platform compiles for it).
	for _, arch := range []string{"arm64"} {
		typecheck.For(t, root, "linux", arch, "./cmd/virtnet-binding-sidecar", "./cmd/virtnet-binding-cni",
			"./cmd/virtnet-macvtap-dp", "./cmd/macvtap-cni")
	}
}
