package domxml_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/netdriver/netdrivertest"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/phase2"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// kv19Dir holds VMI manifests with KubeVirt 1.x's interface fields and,
// beside each, the domain KubeVirt v1.9.0's own mutating webhook and
// converter gave it (run outside the repository; see the README there).
const kv19Dir = "testdata/kubevirt-v1.9.0-interfaces"

// interfaceParts are the parts of an <interface> both sides render from
// the VMI alone (the tap's name, MAC and MTU of a tap attachment come from
// the pod at run time in KubeVirt: not compared).
var interfaceParts = []string{"", "/model", "/link", "/acpi", "/boot", "/rom", "/backend", "/driver", "/source"}

// ifaceView is each interface's compared parts, by alias, and the
// domain's memory backing.
func ifaceView(elems map[string]string, withMAC map[string]bool) map[string]string {
	out := map[string]string{}
	for path, desc := range elems {
		rest, ok := strings.CutPrefix(path, "domain/devices/interface[")
		if !ok {
			if strings.HasPrefix(path, "domain/memoryBacking/") {
				out[path] = desc
			}
			continue
		}
		alias, sub, _ := strings.Cut(rest, "]")
		keep := strings.HasPrefix(sub, "/portForward") || (sub == "/mac" && withMAC[alias])
		for _, p := range interfaceParts {
			keep = keep || sub == p
		}
		if !keep {
			continue
		}
		if sub == "" {
			// Only the interface's type: the rest are children.
			desc = attr(desc, "type")
		}
		if sub == "/source" && !strings.Contains(desc, "dev=") {
			continue
		}
		out[path] = desc
	}
	return out
}

func attr(desc, name string) string {
	for _, f := range strings.Fields(desc) {
		if strings.HasPrefix(f, name+"=") {
			return f
		}
	}
	return ""
}

// TestKubeVirt19Interfaces renders each manifest through virtnet's two
// phases and compares the interfaces with KubeVirt v1.9.0's converter
// output, part by part (type, model, link state, ACPI index, boot order,
// ROM, passt backend and port forwards, the passt MAC), and the memory
// backing passtBinding needs. An absent interface is in neither.
func TestKubeVirt19Interfaces(t *testing.T) {
	manifests, err := filepath.Glob(filepath.Join(kv19Dir, "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, manifests)
	for _, m := range manifests {
		name := strings.TrimSuffix(filepath.Base(m), ".yaml")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(m)
			require.NoError(t, err)
			kvXML, err := os.ReadFile(filepath.Join(kv19Dir, name+".xml"))
			require.NoError(t, err)
			vmi, err := api.Load(data)
			require.NoError(t, err)
			pairs, err := api.Pairs(vmi)
			require.NoError(t, err)
			var links []netdrivertest.SimLink
			for _, p := range pairs {
				links = append(links, netdrivertest.SimLink{Name: p.PodInterface})
			}
			s := testutil.NewStore(t)
			require.NoError(t, phase1.Run(context.Background(), vmi, "", s, phase1.Options{Driver: netdrivertest.SimulatedPod(links...)}))
			dom, err := phase2.Domain(context.Background(), vmi, s, phase2.Options{Render: binding.RenderOptions{InterfaceType: binding.InterfaceEthernet}})
			require.NoError(t, err)
			ours, err := dom.Marshal()
			require.NoError(t, err)

			withMAC := map[string]bool{}
			for _, i := range vmi.Spec.Domain.Devices.Interfaces {
				if i.MacAddress != "" && i.Binding() == api.BindingPasst {
					withMAC["ua-"+i.Name] = true
				}
			}
			on, err := parseXML([]byte(ours))
			require.NoError(t, err)
			kn, err := parseXML(kvXML)
			require.NoError(t, err)
			got, want := ifaceView(elements(on), withMAC), ifaceView(elements(kn), withMAC)
			require.NotEmpty(t, want)
			require.Equal(t, sorted(want), sorted(got), "virtnet (got) and KubeVirt v1.9.0 (want) differ")
		})
	}
}

func sorted(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+" "+v)
	}
	sort.Strings(out)
	return out
}
