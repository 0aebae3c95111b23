//go:build linux

package deploy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// kustomizeVersion is the kustomize the test builds every kustomization
// with (go install from the module proxy; v5.8.3 needs Go 1.27).
const kustomizeVersion = "v5.8.2"

// kustomize returns a kustomize binary of kustomizeVersion, built once
// into the user cache directory.
func kustomize(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		testutil.Skip(t, "the go command, to build kustomize "+kustomizeVersion)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "virtnet-kustomize", kustomizeVersion)
	bin := filepath.Join(dir, "kustomize")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	tmp, err := os.MkdirTemp(dir, "build-")
	require.NoError(t, err)
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "install", "sigs.k8s.io/kustomize/kustomize/v5@"+kustomizeVersion)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go install kustomize: %s", out)
	require.NoError(t, os.Rename(filepath.Join(tmp, "kustomize"), bin))
	return bin
}

// kustomizations returns the directories under deploy/ that hold a
// kustomization, with its kind (Kustomization or Component).
func kustomizations(t *testing.T) map[string]string {
	out := map[string]string{}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch d.Name() {
		case "kustomization.yaml", "kustomization.yml", "Kustomization":
		default:
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var k struct{ Kind string }
		if err := yaml.Unmarshal(b, &k); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		out[filepath.Dir(p)] = k.Kind
		return nil
	})
	require.NoError(t, err)
	return out
}

// object is a Kubernetes object's kind and, for the kinds whose types
// k8s.io/api does not have, the shape the strict decoder checks against.
type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// kubevirtCRObject has the fields of KubeVirt v1.9.0's KubeVirt that
// deploy/ sets (network binding registrations only).
type kubevirtCRObject struct {
	typeMeta   `json:",inline"`
	ObjectMeta metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		Configuration struct {
			Network struct {
				Binding map[string]bindingPlugin `json:"binding"`
			} `json:"network"`
		} `json:"configuration"`
	} `json:"spec"`
}

// nadObject is Multus' NetworkAttachmentDefinition (k8s.cni.cncf.io/v1).
type nadObject struct {
	typeMeta   `json:",inline"`
	ObjectMeta metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		Config string `json:"config"`
	} `json:"spec"`
}

// decodeObject decodes one YAML document strictly as the API server does
// (sigs.k8s.io/json: unknown fields, duplicate fields and case-mismatched
// keys refused) into k8s.io/api's type for its kind, or for KubeVirt and
// Multus kinds into the shapes above (a VirtualMachine: api.Decode, the
// same strictness on KubeVirt's schema). It returns the kind and the
// decoded object.
func decodeObject(doc []byte) (string, any, error) {
	j, err := yaml.YAMLToJSONStrict(doc) // duplicate keys refused, as the API server's strict YAML
	if err != nil {
		return "", nil, err
	}
	var tm typeMeta
	if err := k8sjson.UnmarshalCaseSensitivePreserveInts(j, &tm); err != nil {
		return "", nil, err
	}
	var obj any
	switch tm.APIVersion + " " + tm.Kind {
	case "apps/v1 DaemonSet":
		obj = &appsv1.DaemonSet{}
	case "v1 ConfigMap":
		obj = &corev1.ConfigMap{}
	case "kubevirt.io/v1 KubeVirt":
		obj = &kubevirtCRObject{}
	case "k8s.cni.cncf.io/v1 NetworkAttachmentDefinition":
		obj = &nadObject{}
	case "kubevirt.io/v1 VirtualMachine":
		vmi, err := api.Decode(doc)
		return tm.Kind, vmi, err
	default:
		return tm.Kind, nil, fmt.Errorf("no strict decoder for %s %s", tm.APIVersion, tm.Kind)
	}
	strictErrs, err := k8sjson.UnmarshalStrict(j, obj)
	if err != nil {
		return tm.Kind, nil, err
	}
	if len(strictErrs) > 0 {
		return tm.Kind, nil, fmt.Errorf("%s: %w", tm.Kind, errors.Join(strictErrs...))
	}
	if n, ok := obj.(*nadObject); ok {
		if _, err := libcni.NetworkPluginConfFromBytes([]byte(n.Spec.Config)); err != nil {
			return tm.Kind, nil, fmt.Errorf("NAD %s: spec.config: %w", n.ObjectMeta.Name, err)
		}
	}
	return tm.Kind, obj, nil
}

// splitDocs splits a YAML stream at its "---" lines.
func splitDocs(b []byte) [][]byte {
	var out [][]byte
	for _, d := range bytes.Split(append([]byte("\n"), b...), []byte("\n---\n")) {
		if len(bytes.TrimSpace(d)) > 0 {
			out = append(out, d)
		}
	}
	return out
}

// TestDecodeObjectStrict: the strict decoder refuses what the API server
// refuses (unknown, duplicate, case-mismatched fields; a NAD whose config
// libcni does not load; a kind it has no type for).
func TestDecodeObjectStrict(t *testing.T) {
	const ds = "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: x}\nspec:\n  template:\n    spec:\n      containers: [{name: c, image: i%s}]\n"
	for _, tc := range []struct {
		name, doc, err string
	}{
		{"valid", fmt.Sprintf(ds, ""), ""},
		{"unknown field", fmt.Sprintf(ds, ", imagePullPolicyy: Always"), `unknown field "spec.template.spec.containers[0].imagePullPolicyy"`},
		{"duplicate field", fmt.Sprintf(ds, ", image: j"), `key "image" already set in map`},
		{"case mismatch", fmt.Sprintf(ds, ", Command: [x]"), `unknown field "spec.template.spec.containers[0].Command"`},
		{"nad config", "apiVersion: k8s.cni.cncf.io/v1\nkind: NetworkAttachmentDefinition\nmetadata: {name: nad}\nspec: {config: '{\"cniVersion\": \"1.0.0\", \"name\": \"nad\"}'}\n", "NAD nad: spec.config"},
		{"kind", "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n", "no strict decoder for v1 Secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := decodeObject([]byte(tc.doc))
			if tc.err == "" {
				require.NoError(t, err)
			} else {
				require.ErrorContains(t, err, tc.err)
			}
		})
	}
}

// TestKustomizeBuild: every kustomization under deploy/ builds with
// kustomize (kustomizeVersion, from the module proxy) and its output
// decodes strictly (decodeObject); every component is used. The install
// and upgrade steps are separate kustomizations, so that the documented
// order can be followed: deploy/sidecars (or deploy/kubevirt-1.1) holds
// the KubeVirt CR alone, deploy/cni (or deploy/cni-bin-dir) the CNI
// installer and its NADs, and no kustomization applies both at once.
func TestKustomizeBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kustomize from the module proxy (-short)")
	}
	bin := kustomize(t)
	ks := kustomizations(t)
	require.Equal(t, map[string]string{
		"images":       "Component",
		"sidecars":     "Kustomization",
		"kubevirt-1.1": "Kustomization",
		"cni":          "Kustomization",
		"cni-bin-dir":  "Kustomization",
	}, ks, "the kustomizations of deploy/ (add a new one here with what it must hold)")
	_, err := os.Stat("kustomization.yaml")
	require.ErrorIs(t, err, fs.ErrNotExist, "deploy/ itself is no kustomization: one apply of both steps breaks the upgrade order")

	want := map[string][]string{
		"sidecars":     {"KubeVirt"},
		"kubevirt-1.1": {"KubeVirt"},
		"cni":          {"DaemonSet", "NetworkAttachmentDefinition", "NetworkAttachmentDefinition"},
		"cni-bin-dir":  {"DaemonSet", "NetworkAttachmentDefinition", "NetworkAttachmentDefinition"},
	}
	for dir, kind := range ks {
		if kind == "Component" {
			continue
		}
		t.Run(dir, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "build", dir)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			require.NoError(t, err, "kustomize build deploy/%s: %s", dir, stderr.Bytes())
			var kinds []string
			for i, doc := range splitDocs(out) {
				kind, obj, err := decodeObject(doc)
				require.NoError(t, err, "deploy/%s: document %d", dir, i)
				kinds = append(kinds, kind)
				switch o := obj.(type) {
				case *kubevirtCRObject:
					for name, p := range o.Spec.Configuration.Network.Binding {
						require.Regexp(t, `^registry\.example\.org/virtnet/[a-z]+-sidecar:v\d+\.\d+\.\d+$`, p.SidecarImage, name)
						if dir == "kubevirt-1.1" {
							require.Nil(t, p.Migration, "%s: KubeVirt 1.1 has no migration field", name)
						}
					}
				case *appsv1.DaemonSet:
					cnibin := slices.IndexFunc(o.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "cnibin" })
					require.GreaterOrEqual(t, cnibin, 0)
					path := o.Spec.Template.Spec.Volumes[cnibin].HostPath.Path
					if dir == "cni-bin-dir" {
						require.Equal(t, "/var/lib/cni/bin", path)
					} else {
						require.Equal(t, "/opt/cni/bin", path)
					}
				}
			}
			slices.Sort(kinds)
			require.Equal(t, want[dir], kinds)
		})
	}
}

// TestDeployFilesDecodeStrictly: the files applied with kubectl apply -f
// (not through a kustomization) decode strictly too.
func TestDeployFilesDecodeStrictly(t *testing.T) {
	for _, f := range []string{"macvtap.yaml", "example-network.yaml", "vm-example.yaml"} {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for i, doc := range splitDocs(b) {
			_, _, err := decodeObject(doc)
			require.NoError(t, err, "%s: document %d", f, i)
		}
	}
	// A file in deploy/ that is neither of these nor part of a kustomization
	// would escape both checks.
	all, err := filepath.Glob("*.yaml")
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"macvtap.yaml", "example-network.yaml", "vm-example.yaml"}, all)
}

// TestImagesComponentOverrides: naming another registry and release in
// deploy/images alone (docs/kubevirt-1x.md, Install step 2) changes every
// image that each step applies: the installer's containers and the KubeVirt
// CR's sidecar images, on every KubeVirt release's path.
func TestImagesComponentOverrides(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kustomize from the module proxy (-short)")
	}
	bin := kustomize(t)
	tmp := t.TempDir()
	require.NoError(t, filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(tmp, filepath.Dir(p)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(tmp, p), b, 0o644)
	}))
	var comp map[string]any
	b, err := os.ReadFile("images/kustomization.yaml")
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &comp))
	for _, im := range comp["images"].([]any) {
		m := im.(map[string]any)
		m["newName"] = "mirror.example.com/" + filepath.Base(m["name"].(string))
		m["newTag"] = "v9.9.9"
	}
	b, err = yaml.Marshal(comp)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(tmp, "images/kustomization.yaml"), b, 0o644))

	imageRE := regexp.MustCompile(`(?m)^\s+-? ?(image|sidecarImage): (\S+)$`)
	for dir, kind := range kustomizations(t) {
		if kind == "Component" {
			continue
		}
		out, err := exec.CommandContext(t.Context(), bin, "build", filepath.Join(tmp, dir)).CombinedOutput()
		require.NoError(t, err, "%s: %s", dir, out)
		images := imageRE.FindAllStringSubmatch(string(out), -1)
		require.NotEmpty(t, images, dir)
		for _, m := range images {
			require.Regexp(t, `^mirror\.example\.com/[a-z-]+:v9\.9\.9$`, m[2], "%s: %s", dir, m[0])
		}
	}
}
