package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/virtnet/virtnet/testrig/testutil"
)

// cniExec runs plugin with verb (and conf on stdin) in the runtime's
// namespace runtimeNS and returns its stdout and how long it took.
func cniExec(runtimeNS, plugin, verb, containerID, netns, conf, binDir string) ([]byte, time.Duration, error) {
	cmd := exec.Command(filepath.Join(binDir, plugin))
	cmd.Env = []string{"CNI_COMMAND=" + verb, "CNI_PATH=" + binDir}
	if verb != "GC" {
		cmd.Env = append(cmd.Env, "CNI_CONTAINERID="+containerID, "CNI_NETNS="+netns, "CNI_IFNAME=net1")
	}
	cmd.Stdin = strings.NewReader(conf)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	nsh, err := ns.GetNS(runtimeNS)
	if err != nil {
		return nil, 0, err
	}
	defer func() { _ = nsh.Close() }()
	var took time.Duration
	err = nsh.Do(func(ns.NetNS) error {
		start := time.Now()
		err := cmd.Run()
		took = time.Since(start)
		return err
	})
	if err != nil {
		return nil, took, fmt.Errorf("%s %s %s: %w\n%s%s", plugin, verb, containerID, err, stdout.String(), stderr.String())
	}
	return stdout.Bytes(), took, nil
}

// percentile is the p-th percentile (nearest rank) of d.
func percentile(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	i := (p*len(s)+99)/100 - 1
	return s[max(i, 0)]
}

// withPrevResult adds prevResult (an ADD's result) to conf, as a runtime
// does for CHECK and DEL.
func withPrevResult(conf string, result []byte) (string, error) {
	var m map[string]any
	if err := json.Unmarshal([]byte(conf), &m); err != nil {
		return "", err
	}
	var r any
	if err := json.Unmarshal(result, &r); err != nil {
		return "", err
	}
	m["prevResult"] = r
	b, err := json.Marshal(m)
	return string(b), err
}

// BenchmarkCNINode is a node of 100 pods as a kubelet drives it: every
// verb runs as a whole process, 10 pods at a time (batches of concurrent
// calls), on 100 fresh pods in one node namespace: ADD of each pod, CHECK
// of each (with the ADD's prevResult), a GC (CNI 1.1) of the network with
// the 100 attachments valid, DEL of each. For the reference bridge plugin
// (with host-local) and virtnet-binding-cni with the masquerade binding;
// it reports p50 and p99 per verb (add-p50-ns, …) and the GC's time.
// With -short (test.sh's bench pass, which checks only that every
// benchmark still runs) the node has 20 pods: the same code, a fifth of
// the 50 s.
func BenchmarkCNINode(b *testing.B) {
	testutil.RequireRoot(b)
	pods, batch := 100, 10
	if testing.Short() {
		pods = 20
	}
	bin := buildPlugins(b)
	confs := []struct {
		name, plugin, conf string
		dir                func(testing.TB) string
	}{
		{"bridge-reference", "bridge", `{"cniVersion":"1.1.0","name":"benchnet","type":"bridge","bridge":"cni0",` +
			`"ipam":{"type":"host-local","subnet":"10.250.0.0/16","dataDir":"%s"}}`, testing.TB.TempDir},
		{"virtnet-binding-cni-masquerade", "virtnet-binding-cni", `{"cniVersion":"1.1.0","name":"virtnet-masquerade","type":"virtnet-binding-cni",` +
			`"binding":"masquerade","cacheDir":"%s","args":{"cni":{"logicNetworkName":"default"}}}`, runTempDir},
	}
	for _, c := range confs {
		b.Run(c.name, func(b *testing.B) {
			var adds, checks, dels, gcs []time.Duration
			for b.Loop() {
				b.StopTimer()
				node := testutil.NewNS(b, "vn-node")
				podNS := make([]string, pods)
				ids := make([]string, pods)
				for i := range podNS {
					p := testutil.NewNS(b, "vn-pod")
					testutil.AddVeth(b, node, fmt.Sprintf("veth%d", i), p, "eth0", 1500)
					// The pod network's address on eth0, as the
					// cluster's CNI leaves it (masquerade needs it).
					eth0, err := p.Handle.LinkByName("eth0")
					require.NoError(b, err)
					addr, err := netlink.ParseAddr(fmt.Sprintf("10.251.%d.%d/16", i/200, 2+i%200))
					require.NoError(b, err)
					require.NoError(b, p.Handle.AddrAdd(eth0, addr))
					require.NoError(b, p.Handle.RouteAdd(&netlink.Route{LinkIndex: eth0.Attrs().Index, Gw: net.IPv4(10, 251, 255, 1)}))
					podNS[i], ids[i] = p.Path, fmt.Sprintf("bench-%d-%s", i, filepath.Base(p.Path))
				}
				if c.plugin == "bridge" {
					// A bridge whose MAC is set stays at it: the
					// plugin's CHECK compares the MAC of its ADD's
					// result, which ports joining later would change.
					attrs := netlink.NewLinkAttrs()
					attrs.Name, attrs.HardwareAddr = "cni0", net.HardwareAddr{0x02, 0, 0, 0, 0, 1}
					require.NoError(b, node.Handle.LinkAdd(&netlink.Bridge{LinkAttrs: attrs}))
				}
				conf := fmt.Sprintf(c.conf, c.dir(b))
				results := make([][]byte, pods)
				b.StartTimer()
				var mu sync.Mutex
				phase := func(verb string, into *[]time.Duration, confOf func(i int) (string, error)) {
					for lo := 0; lo < pods; lo += batch {
						var wg sync.WaitGroup
						errs := make([]error, batch)
						for i := lo; i < min(lo+batch, pods); i++ {
							wg.Go(func() {
								cf, err := confOf(i)
								if err != nil {
									errs[i-lo] = err
									return
								}
								out, took, err := cniExec(node.Path, c.plugin, verb, ids[i], podNS[i], cf, bin)
								errs[i-lo] = err
								mu.Lock()
								*into = append(*into, took)
								if verb == "ADD" {
									results[i] = out
								}
								mu.Unlock()
							})
						}
						wg.Wait()
						for _, err := range errs {
							require.NoError(b, err)
						}
					}
				}
				phase("ADD", &adds, func(int) (string, error) { return conf, nil })
				phase("CHECK", &checks, func(i int) (string, error) { return withPrevResult(conf, results[i]) })
				valid := make([]map[string]string, pods)
				for i := range valid {
					valid[i] = map[string]string{"containerID": ids[i], "ifname": "net1"}
				}
				var m map[string]any
				require.NoError(b, json.Unmarshal([]byte(conf), &m))
				m["cni.dev/valid-attachments"] = valid
				gcConf, err := json.Marshal(m)
				require.NoError(b, err)
				_, took, err := cniExec(node.Path, c.plugin, "GC", "", "", string(gcConf), bin)
				require.NoError(b, err)
				gcs = append(gcs, took)
				phase("DEL", &dels, func(i int) (string, error) { return withPrevResult(conf, results[i]) })
			}
			for _, v := range []struct {
				name string
				d    []time.Duration
			}{{"add", adds}, {"check", checks}, {"del", dels}} {
				b.ReportMetric(float64(percentile(v.d, 50)), v.name+"-p50-ns")
				b.ReportMetric(float64(percentile(v.d, 99)), v.name+"-p99-ns")
			}
			b.ReportMetric(float64(percentile(gcs, 50)), "gc-ns")
		})
	}
}
