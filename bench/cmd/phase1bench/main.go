//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/virtnet/virtnet/internal/buildinfo"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/virtnet/virtnet/netdriver/kernel"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/netdriver"
	"github.com/virtnet/virtnet/netdriver/intercept"
	"github.com/virtnet/virtnet/phase1"
)

const uid = "b3c4d5e6-0000-4000-8000-00000000be0c"

// profile is set from -profile before anything runs.
var profile bool

// process is set from -process before anything runs: phase1's side is
// then that virtnet-xml binary as a whole process.
var process string

// cacheParent is set from -cache-dir.
var cacheParent string

// settleTime is set from -settle.
var settleTime time.Duration

func main() {
	ns := flag.String("n", "1,8,64", "comma-separated numbers of bridge interfaces")
	runs := flag.Int("runs", 5, "runs per case (the median is reported)")
	scripts := flag.String("scripts", "bench", "directory holding bridge.sh and masquerade.sh")
	masq := flag.Bool("masquerade", true, "also run the masquerade case")
	header := flag.Bool("header", true, "print the table header")
	flag.StringVar(&cacheParent, "cache-dir", os.TempDir(), "where phase1's cache directories go (tmpfs or disk: the atomic writes fsync)")
	flag.BoolVar(&profile, "profile", false, "print, per driver method, the calls and time of phase1's last run of each case (stderr)")
	peer := flag.String("peer", "", "directory holding a peer's phase1 (layout in the package doc; KubeVirt's v0.53.2 or v1.9.0): time it against ours instead")
	peerState := flag.String("peer-state", "", "with -peer: write each side's kernel state after the first run of each case into this directory")
	settle := flag.Duration("settle", 0, "wait after creating each pod's namespaces (and 5 ms more per interface), so that the previous run's namespaces are gone")
	flag.StringVar(&process, "process", "", "a virtnet-xml binary: time phase1's side as that whole process (-vmi FILE -netns POD: exec, init, decode, phase1, render) instead of the phase1 call")
	showVersion := flag.Bool("version", false, "print the version and exit")
	flag.Parse()
	if *showVersion {
		fmt.Println(buildinfo.About("phase1bench"))
		return
	}
	settleTime = *settle
	if *peer != "" {
		if err := runPeer(*peer, *runs, *settle, *header, *peerState); err != nil {
			fmt.Fprintln(os.Stderr, "phase1bench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*ns, *runs, *scripts, *masq, *header); err != nil {
		fmt.Fprintln(os.Stderr, "phase1bench:", err)
		os.Exit(1)
	}
}

// result is one case's medians.
type result struct {
	name     string
	ifaces   int
	ours, sh time.Duration
	requests int64
}

func run(nlist string, runs int, scripts string, masq, header bool) error {
	if os.Geteuid() != 0 {
		return errors.New("needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) to create network namespaces")
	}
	var cases []int
	for _, s := range strings.Split(nlist, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 999 {
			return fmt.Errorf("-n: bad interface count %q", s)
		}
		cases = append(cases, n)
	}
	if header {
		fmt.Println("| phase1 case | phase1 (median) | script (median) | ratio ours/script | phase1 per iface | script per iface | kernel requests per iface |")
		fmt.Println("|---|---:|---:|---:|---:|---:|---:|")
	}
	for _, n := range cases {
		r, err := measure(fmt.Sprintf("bridge no-IPAM ×%d", n), n, runs, false, filepath.Join(scripts, "bridge.sh"))
		if err != nil {
			return err
		}
		r.print()
	}
	if masq {
		r, err := measure("masquerade ×1 (2 ports)", 1, runs, true, filepath.Join(scripts, "masquerade.sh"))
		if err != nil {
			return err
		}
		r.print()
	}
	return nil
}

func (r result) print() {
	n := time.Duration(r.ifaces)
	fmt.Printf("| %s | %s | %s | %.3f | %s | %s | %.1f |\n", r.name, ms(r.ours), ms(r.sh),
		float64(r.ours)/float64(r.sh), us(r.ours/n), ms(r.sh/n), float64(r.requests)/float64(r.ifaces))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/1e6) }
func us(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/1e3) }

func measure(name string, n, runs int, masq bool, script string) (result, error) {
	res := result{name: name, ifaces: n}
	var ours, sh []time.Duration
	vmi, err := vmiFor(n, masq)
	if err != nil {
		return res, err
	}
	for r := range runs {
		// Alternate which side goes first so that neither always runs on
		// a warmer kernel.
		order := []bool{true, false}
		if r%2 == 1 {
			order = []bool{false, true}
		}
		for _, phase1Side := range order {
			pod, cleanup, err := newPod(n, masq)
			if err != nil {
				return res, err
			}
			// The kernel tears the previous run's namespaces down
			// asynchronously, under the locks the next run needs:
			// wait for it, longer for more links.
			time.Sleep(settleTime + time.Duration(n)*5*time.Millisecond)
			var d time.Duration
			var reqs int64
			switch {
			case phase1Side && process != "":
				d, err = runProcess(vmi, pod)
			case phase1Side:
				d, reqs, err = runPhase1(vmi, pod)
			default:
				d, err = runScript(pod, script, n, masq)
			}
			if err == nil {
				var links int
				links, err = countLinks(pod)
				if err == nil && links != 1+3*n {
					err = fmt.Errorf("%s: %d links after the run, want %d", name, links, 1+3*n)
				}
			}
			cleanup()
			if err != nil {
				return res, err
			}
			if phase1Side {
				ours = append(ours, d)
				res.requests = reqs
			} else {
				sh = append(sh, d)
			}
		}
	}
	res.ours, res.sh = median(ours), median(sh)
	return res, nil
}

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func vmiFor(n int, masq bool) (*api.VMI, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "kind: VirtualMachineInstance\nmetadata: {name: bench, namespace: bench, uid: %s}\nspec:\n  domain:\n    devices:\n      interfaces:\n", uid)
	if masq {
		b.WriteString("      - {name: default, masquerade: {}, ports: [{port: 80}, {port: 53, protocol: UDP}]}\n  networks:\n  - {name: default, pod: {}}\n")
		return api.Load([]byte(b.String()))
	}
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "      - {name: n%d, bridge: {}}\n", i)
	}
	b.WriteString("  networks:\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  - {name: n%d, multus: {networkName: net-%d}}\n", i, i)
	}
	return api.Load([]byte(b.String()))
}

func runPhase1(vmi *api.VMI, pod string) (time.Duration, int64, error) {
	dir, err := os.MkdirTemp(cacheParent, "phase1bench-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	store, err := cache.New(filepath.Join(dir, "cache"))
	if err != nil {
		return 0, 0, err
	}
	path := "/var/run/netns/" + pod
	start := time.Now()
	d, err := kernel.Open(path)
	if err != nil {
		return 0, 0, err
	}
	var drv netdriver.Driver = d
	type stat struct {
		n    int
		took time.Duration
	}
	stats := map[string]*stat{}
	if profile {
		drv = &intercept.Driver{Inner: d, After: func(c intercept.Call, took time.Duration, _ error) {
			s := stats[c.Method]
			if s == nil {
				s = &stat{}
				stats[c.Method] = s
			}
			s.n++
			s.took += took
		}}
	}
	err = phase1.Run(context.Background(), vmi, path, store, phase1.Options{Driver: drv, Logger: slog.New(slog.DiscardHandler)})
	d.Close()
	elapsed := time.Since(start)
	if profile {
		var total time.Duration
		keys := make([]string, 0, len(stats))
		for k, s := range stats {
			keys = append(keys, k)
			total += s.took
		}
		slices.SortFunc(keys, func(a, b string) int { return int(stats[b].took - stats[a].took) })
		fmt.Fprintf(os.Stderr, "phase1 %v: %s in driver calls of %s total\n", vmi.Metadata.Name, ms(total), ms(elapsed))
		for _, k := range keys {
			fmt.Fprintf(os.Stderr, "  %-14s %4d calls %10s\n", k, stats[k].n, ms(stats[k].took))
		}
	}
	return elapsed, d.Requests(), err
}

// runProcess times `virtnet-xml -vmi FILE -netns POD -cache DIR -o
// /dev/null`: the whole process a launcher-like caller would start.
func runProcess(vmi *api.VMI, pod string) (time.Duration, error) {
	dir, err := os.MkdirTemp(cacheParent, "phase1bench-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	data, err := json.Marshal(vmi)
	if err != nil {
		return 0, err
	}
	file := filepath.Join(dir, "vmi.json")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		return 0, err
	}
	cmd := exec.Command(process, "-vmi", file, "-netns", pod, "-cache", filepath.Join(dir, "cache"), "-o", os.DevNull)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	elapsed := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("%s: %w\n%s", process, err, out.String())
	}
	return elapsed, nil
}

func runScript(pod, script string, n int, masq bool) (time.Duration, error) {
	args := []string{"netns", "exec", pod, "bash", script}
	if !masq {
		args = append(args, strconv.Itoa(n))
	}
	cmd := exec.Command("ip", args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	elapsed := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("%s: %w: %s", script, err, out.String())
	}
	return elapsed, nil
}

var seq int

// newPod creates a pod namespace holding n veths net1..netN (or eth0 with
// 10.244.1.7/24 and a default route for masquerade) whose peers sit in a
// node namespace, as a CNI leaves them; cleanup deletes both.
func newPod(n int, masq bool) (string, func(), error) {
	seq++
	pod := fmt.Sprintf("vnb-pod-%d-%d", os.Getpid(), seq)
	node := fmt.Sprintf("vnb-node-%d-%d", os.Getpid(), seq)
	cleanup := func() {
		_ = exec.Command("ip", "netns", "del", pod).Run()
		_ = exec.Command("ip", "netns", "del", node).Run()
	}
	for _, name := range []string{pod, node} {
		if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
			cleanup()
			return "", nil, fmt.Errorf("add namespace %s: %w: %s", name, err, out)
		}
	}
	var b strings.Builder
	if masq {
		fmt.Fprintf(&b, "link add eth0 mtu 1440 type veth peer name p0 mtu 1440 netns %s\n", node)
		b.WriteString("addr add 10.244.1.7/24 dev eth0\nlink set eth0 up\nroute add default via 10.244.1.1\n")
	}
	for i := 1; i <= n && !masq; i++ {
		fmt.Fprintf(&b, "link add net%d mtu 1440 type veth peer name p%d mtu 1440 netns %s\nlink set net%d up\n", i, i, node, i)
	}
	cmd := exec.Command("ip", "-n", pod, "-batch", "-")
	cmd.Stdin = strings.NewReader(b.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("set up namespaces: %w: %s", err, out)
	}
	return pod, cleanup, nil
}

func countLinks(pod string) (int, error) {
	out, err := exec.Command("ip", "-n", pod, "-o", "link", "show").Output()
	if err != nil {
		return 0, fmt.Errorf("list links of %s: %w", pod, err)
	}
	return bytes.Count(out, []byte("\n")), nil
}
