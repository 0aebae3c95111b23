//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
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
	"github.com/virtnet/virtnet/netdriver/intercept"
	"github.com/virtnet/virtnet/phase1"
)

// peerVMI is the VMI both sides set up: masquerade with two ports, the
// migration ports returned (no status), as KubeVirt v0.53.2 sees a VMI
// created before migrationTransport existed.
const peerVMI = `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: bench, namespace: bench, uid: ` + uid + `}
spec:
  domain:
    devices:
      interfaces:
      - {name: default, masquerade: {}, ports: [{port: 80}, {port: 53, protocol: UDP}]}
  networks:
  - {name: default, pod: {}}
`

// peerCase is one case of the peer comparison.
type peerCase struct {
	name string
	vmi  string
	pod  func() (string, func(), error)
	// links is how many links the pod has after a run (lo included).
	links int
}

// peerCases are the cases run against KubeVirt's phase1 (of any version:
// the bridge binding is not among them, since KubeVirt v1.9.0's needs the
// dummy link type even without IPAM, which this machine's kernel may
// lack).
func peerCases() []peerCase {
	return []peerCase{
		{"masquerade IPv4, 2 ports", peerVMI, func() (string, func(), error) { return newMasqueradePod(false) }, 4},      // lo, eth0, k6t-eth0, tap0
		{"masquerade dual-stack, 2 ports", peerVMI, func() (string, func(), error) { return newMasqueradePod(true) }, 4}, // the same
	}
}

// peerResult is one peer case's medians.
type peerResult struct {
	name     string
	ours, kv time.Duration
	nat      time.Duration // ours: ApplyNAT's share (all families)
	natKern  time.Duration // ours: the kernel's share of it (sendmsg)
	requests int64
}

// runPeer times phase1.Run against the peer's phase1 in dir (the layout in
// the package doc) on identical fresh pods: same VMI, same
// pod shape, caches on the same file system, sides alternated, settle
// after creating each pod's namespaces.
func runPeer(dir string, runs int, settle time.Duration, header bool, stateDir string) error {
	if os.Geteuid() != 0 {
		return errors.New("needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) to create network namespaces")
	}
	version := "v0.53.2"
	if b, err := os.ReadFile(filepath.Join(dir, "version")); err == nil {
		version = strings.TrimSpace(string(b))
	}
	need := []string{"kubevirt-phase1", "bin/virt-chroot"}
	if version == "v0.53.2" {
		need = append(need, "nftables/ipv4-nat.nft", "nftables/ipv6-nat.nft")
	}
	for _, p := range need {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			return fmt.Errorf("-peer %s: %w (the directory's layout: see phase1bench's doc)", dir, err)
		}
	}
	// KubeVirt loads /etc/nftables/ipv[46]-nat.nft; the files are bind
	// mounted there in the peer's private mount namespace, on a mount
	// point made for the run when the machine has none.
	if _, err := os.Stat("/etc/nftables"); errors.Is(err, os.ErrNotExist) {
		if err := os.Mkdir("/etc/nftables", 0o755); err != nil {
			return err
		}
		defer os.Remove("/etc/nftables")
	}
	work, err := os.MkdirTemp(cacheParent, "phase1bench-peer-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	// KubeVirt's cache writes chown to the user qemu (107), which this
	// machine may not have: the peer sees passwd and group files with it,
	// bind mounted in its private mount namespace.
	for _, f := range []struct{ name, line string }{{"passwd", "qemu:x:107:107:qemu:/:/usr/sbin/nologin\n"}, {"group", "qemu:x:107:\n"}} {
		data, err := os.ReadFile("/etc/" + f.name)
		if err != nil {
			return err
		}
		if !bytes.Contains(data, []byte("\nqemu:")) && !bytes.HasPrefix(data, []byte("qemu:")) {
			if len(data) > 0 && data[len(data)-1] != '\n' {
				data = append(data, '\n')
			}
			data = append(data, f.line...)
		}
		if err := os.WriteFile(filepath.Join(work, f.name), data, 0o644); err != nil {
			return err
		}
	}
	if header {
		fmt.Printf("| peer case | phase1 call (median) | KubeVirt %s phase1 call (median) | ratio ours/KubeVirt | our ApplyNAT (median) | its kernel share (sendmsg) | kernel requests |\n", version)
		fmt.Println("|---|---:|---:|---:|---:|---:|---:|")
	}
	for i, c := range peerCases() {
		name := c.name
		vmiFile := filepath.Join(work, fmt.Sprintf("vmi-%d.yaml", i))
		if err := os.WriteFile(vmiFile, []byte(c.vmi), 0o644); err != nil {
			return err
		}
		vmi, err := api.Load([]byte(c.vmi))
		if err != nil {
			return err
		}
		res := peerResult{name: name}
		var ours, kv, nat, kern []time.Duration
		for r := range runs {
			order := []bool{true, false}
			if r%2 == 1 {
				order = []bool{false, true}
			}
			for _, oursSide := range order {
				pod, cleanup, err := c.pod()
				if err != nil {
					return err
				}
				time.Sleep(settle)
				if oursSide {
					var s peerSample
					s, err = runOurs(vmi, pod)
					ours, nat, kern = append(ours, s.call), append(nat, s.nat), append(kern, s.natKernel)
					res.requests = s.requests
				} else {
					var d time.Duration
					d, err = runKubeVirt(dir, work, vmiFile, pod)
					kv = append(kv, d)
				}
				if err == nil && stateDir != "" && r == 0 {
					side := "virtnet"
					if !oursSide {
						side = "kubevirt-" + version
					}
					err = dumpState(pod, filepath.Join(stateDir, strings.NewReplacer(" ", "-", ",", "").Replace(name)+"."+side+".txt"))
				}
				if err == nil {
					var links int
					if links, err = countLinks(pod); err == nil && links != c.links {
						err = fmt.Errorf("%s: %d links after the run, want %d", name, links, c.links)
					}
				}
				cleanup()
				if err != nil {
					return err
				}
			}
		}
		res.ours, res.kv, res.nat, res.natKern = median(ours), median(kv), median(nat), median(kern)
		fmt.Printf("| %s | %s | %s | %.3f | %s | %s | %d |\n", res.name, ms(res.ours), ms(res.kv),
			float64(res.ours)/float64(res.kv), ms(res.nat), ms(res.natKern), res.requests)
	}
	return nil
}

// dumpState writes the pod's kernel state after a run to file, for a
// side-by-side comparison: links, addresses, routes and rules, the
// nftables ruleset and the sysctls either side may set.
func dumpState(pod, file string) error {
	var b bytes.Buffer
	for _, args := range [][]string{
		{"ip", "-n", pod, "-d", "link", "show"},
		{"ip", "-n", pod, "addr", "show"},
		{"ip", "-n", pod, "-4", "route", "show", "table", "all"},
		{"ip", "-n", pod, "-6", "route", "show", "table", "all"},
		{"ip", "-n", pod, "-4", "rule", "show"},
		{"ip", "-n", pod, "-6", "rule", "show"},
		{"ip", "-n", pod, "neigh", "show"},
		{"ip", "netns", "exec", pod, "nft", "list", "ruleset"},
		{"ip", "netns", "exec", pod, "sysctl", "net.ipv4.ip_forward", "net.ipv6.conf.all.forwarding",
			"net.ipv4.ip_unprivileged_port_start", "net.ipv4.ping_group_range", "net.ipv4.conf.all.route_localnet",
			"net.ipv4.conf.eth0.route_localnet", "net.ipv6.conf.all.accept_ra", "net.ipv6.conf.eth0.accept_ra",
			"net.ipv4.conf.all.arp_ignore", "net.ipv6.conf.all.disable_ipv6"},
	} {
		fmt.Fprintf(&b, "## %s\n", strings.ReplaceAll(strings.Join(args, " "), pod, "POD"))
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		b.Write(out)
		if err != nil {
			fmt.Fprintf(&b, "(%v)\n", err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	return os.WriteFile(file, b.Bytes(), 0o644)
}

// peerSample is one run of our side.
type peerSample struct {
	call, nat, natKernel time.Duration
	requests             int64
}

// runOurs times phase1.Run as runPhase1 does (opening the namespace and
// writing the caches included), with the time of each driver method.
func runOurs(vmi *api.VMI, pod string) (peerSample, error) {
	var s peerSample
	dir, err := os.MkdirTemp(cacheParent, "phase1bench-")
	if err != nil {
		return s, err
	}
	defer os.RemoveAll(dir)
	store, err := cache.New(filepath.Join(dir, "cache"))
	if err != nil {
		return s, err
	}
	path := "/var/run/netns/" + pod
	took := map[string]time.Duration{}
	calls := map[string]int{}
	start := time.Now()
	d, err := kernel.Open(path)
	if err != nil {
		return s, err
	}
	drv := &intercept.Driver{Inner: d, After: func(c intercept.Call, t time.Duration, _ error) {
		took[c.Method] += t
		calls[c.Method]++
	}}
	err = phase1.Run(context.Background(), vmi, path, store, phase1.Options{Driver: drv, Logger: slog.New(slog.DiscardHandler)})
	d.Close()
	s.call = time.Since(start)
	s.nat, s.natKernel, s.requests = took["ApplyNAT"], d.NATKernelTime(), d.Requests()
	if profile {
		keys := slices.Collect(maps.Keys(took))
		slices.SortFunc(keys, func(a, b string) int { return int(took[b] - took[a]) })
		var total time.Duration
		for _, k := range keys {
			total += took[k]
		}
		fmt.Fprintf(os.Stderr, "phase1 %s: %s in driver calls of %s total\n", pod, ms(total), ms(s.call))
		for _, k := range keys {
			fmt.Fprintf(os.Stderr, "  %-16s %4d calls %10s\n", k, calls[k], ms(took[k]))
		}
	}
	return s, err
}

// runKubeVirt runs KubeVirt's phase1 against pod and returns the duration
// it measured around its NetConf.Setup call.
func runKubeVirt(dir, work, vmiFile, pod string) (time.Duration, error) {
	holder := exec.Command("ip", "netns", "exec", pod, "sleep", "120")
	if err := holder.Start(); err != nil {
		return 0, err
	}
	defer func() { _ = holder.Process.Kill(); _ = holder.Wait() }()
	// Wait (bounded) until the holder lives in the pod's namespace.
	st, err := os.Stat("/var/run/netns/" + pod)
	if err != nil {
		return 0, err
	}
	inPod := false
	for range 400 {
		if hst, err := os.Stat(fmt.Sprintf("/proc/%d/ns/net", holder.Process.Pid)); err == nil && os.SameFile(st, hst) {
			inPod = true
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !inPod {
		return 0, fmt.Errorf("the holder process did not enter %s within 2 s", pod)
	}
	// KubeVirt writes its caches under /var/run/kubevirt-private and
	// chowns them by that absolute path, so its cache creator is rooted at
	// / of a private mount namespace whose /run is a fresh tmpfs (a pod's
	// /var/run is tmpfs too): nothing is left on the machine.
	script := `mount -t tmpfs -o size=64m,mode=0755 virtnet-peer /run &&
		mount --bind "$1/nftables" /etc/nftables && mount --bind "$4/passwd" /etc/passwd &&
		mount --bind "$4/group" /etc/group && exec "$1/kubevirt-phase1" -vmi "$2" -pid "$3" -cache /`
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
		dir, vmiFile, strconv.Itoa(holder.Process.Pid), work)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Join(dir, "bin")+":"+os.Getenv("PATH"), "MY_POD_IP=10.244.1.7")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		tail := errb.String()
		if len(tail) > 2000 {
			tail = tail[len(tail)-2000:]
		}
		return 0, fmt.Errorf("kubevirt-phase1: %w: %s", err, tail)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(out.String()), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("kubevirt-phase1 printed %q: %w", out.String(), err)
	}
	return time.Duration(n), nil
}

// newMasqueradePod is newPod's masquerade shape, with fd00::7/64 and an
// IPv6 default route when dual.
func newMasqueradePod(dual bool) (string, func(), error) {
	if !dual {
		return newPod(1, true)
	}
	pod, cleanup, err := newPod(1, true)
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command("ip", "-n", pod, "-batch", "-")
	cmd.Stdin = strings.NewReader("addr add fd00::7/64 dev eth0 nodad\nroute add default via fd00::1 dev eth0\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("dual-stack pod: %w: %s", err, out)
	}
	return pod, cleanup, nil
}
