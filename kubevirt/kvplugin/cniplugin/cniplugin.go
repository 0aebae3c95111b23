//go:build linux

// Package cniplugin is the CNI plugin of virtnet's KubeVirt 1.x network
// binding plugins (cmd/virtnet-binding-cni is its main): [Plugin.Add] runs
// phase1 for one VM interface in CNI_NETNS and leaves the hand-off record
// on the interface's tap, [Plugin.Del] undoes it, [Plugin.Check] verifies it. See the
// command's documentation for the network configuration.
//
// Outside the compatibility promise: the module's programs are this
// package's users; its API changes with them, whatever the version
// (testrig/apicompat leaves kubevirt/ out).
package cniplugin

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/virtnet/virtnet/netdriver/kernel"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"

	"golang.org/x/sys/unix"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding/masquerade"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/internal/names"
	"github.com/virtnet/virtnet/kubevirt/kvplugin"
	"github.com/virtnet/virtnet/netdriver/intercept"
	"github.com/virtnet/virtnet/phase1"
)

// DefaultCacheDir holds phase1's records on the node (tmpfs: they go with
// a reboot, as the pods do).
const DefaultCacheDir = "/run/virtnet-binding"

// Plugin-specific CNI error codes (CNI reserves 0-99).
const (
	// codePhase1 is a permanent failure of phase1 in the pod namespace
	// (phase1.IsPermanent): retrying cannot help until someone changes
	// the pod, the configuration or the node. A retryable one is CNI's
	// 11, "try again later".
	codePhase1 = 999
)

// unprivilegedPortStart is where the CNI plugin lowers
// net.ipv4.ip_unprivileged_port_start in the pod namespace of a non-root
// VMI, so that the sidecar (uid 107, every capability dropped by KubeVirt)
// can bind the DHCP server ports 67 and 547; defaultPortStart is the value
// of a new namespace, which DEL puts back.
const (
	unprivilegedPortStart = 67
	defaultPortStart      = 1024
	portStartKey          = "ipv4/ip_unprivileged_port_start"
)

// Time limits of one invocation ([Plugin]).
const (
	// DefaultTimeout bounds a whole ADD, DEL or CHECK: well under the
	// runtime's own CNI timeout, so that the plugin answers (code 11)
	// before it is killed.
	DefaultTimeout = 60 * time.Second
	// DefaultLockWait bounds the wait for another run of the same
	// interface or namespace.
	DefaultLockWait = 10 * time.Second
)

// Plugin is the CNI plugin with its time limits; the zero value uses
// [DefaultTimeout] and [DefaultLockWait]. Every verb runs under its
// deadline: a lock held longer than LockWait, or a verb that runs out of
// time, ends in CNI error 11 ("try again later") after undoing what the
// invocation began, never in a wait without end.
type Plugin struct {
	Timeout  time.Duration
	LockWait time.Duration

	// storeHook, when set (tests only), runs inside every record write of
	// the verb's store ([cache.Store.WithHook]).
	storeHook cache.Hook
	// gcLooked, when set (tests only), runs once GC has looked at every
	// record directory, before it forgets any.
	gcLooked func()
}

func (p Plugin) lockWait() time.Duration {
	if p.LockWait <= 0 {
		return DefaultLockWait
	}
	return p.LockWait
}

// tapOwner is the uid and gid of the taps: tapOwner from the
// configuration, else 107, the qemu user of KubeVirt 1.x's non-root
// launchers (the default since 1.0; the CNI plugin cannot see the VMI).
func (c *netConf) tapOwner() phase1.TapOwner {
	if c.TapOwner == nil {
		return phase1.TapOwnerUID(api.QemuID)
	}
	return phase1.TapOwnerUID(*c.TapOwner)
}

// netConf is the network configuration.
type netConf struct {
	types.NetConf
	Binding           string     `json:"binding"`
	CacheDir          string     `json:"cacheDir,omitempty"`
	Ports             []api.Port `json:"ports,omitempty"`
	VMNetworkCIDR     string     `json:"vmNetworkCIDR,omitempty"`
	VMIPv6NetworkCIDR string     `json:"vmIPv6NetworkCIDR,omitempty"`
	LogLevel          string     `json:"logLevel,omitempty"`
	TapOwner          *int       `json:"tapOwner,omitempty"`
	Args              struct {
		CNI struct {
			LogicNetworkName string `json:"logicNetworkName,omitempty"`
		} `json:"cni"`
	} `json:"args"`
	// level is LogLevel parsed (slog.LevelInfo, 0, when unset).
	level slog.Level
}

func loadConf(data []byte) (*netConf, error) {
	invalid := func(msg string) error {
		return types.NewError(types.ErrInvalidNetworkConfig, "virtnet-binding-cni: "+msg, "")
	}
	var c netConf
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, types.NewError(types.ErrDecodingFailure, "virtnet-binding-cni: network configuration is not JSON", err.Error())
	}
	if err := checkKeys(data); err != nil {
		return nil, invalid("network configuration: " + err.Error())
	}
	if err := version.ParsePrevResult(&c.NetConf); err != nil {
		return nil, types.NewError(types.ErrDecodingFailure, "virtnet-binding-cni: prevResult", err.Error())
	}
	switch c.Binding {
	case api.BindingBridge, api.BindingMasquerade:
	default:
		return nil, invalid(fmt.Sprintf("binding %q: must be %q or %q (slirp needs no CNI plugin)", c.Binding, api.BindingBridge, api.BindingMasquerade))
	}
	if c.TapOwner != nil && (*c.TapOwner < 0 || *c.TapOwner > 1<<31-2) {
		return nil, invalid(fmt.Sprintf("tapOwner %d: not a uid", *c.TapOwner))
	}
	c.CacheDir = cmp.Or(c.CacheDir, DefaultCacheDir)
	if err := checkCacheDir(c.CacheDir); err != nil {
		return nil, invalid(err.Error())
	}
	if c.LogLevel != "" {
		if err := c.level.UnmarshalText([]byte(c.LogLevel)); err != nil {
			return nil, invalid(fmt.Sprintf("logLevel %q: want debug, info, warn or error", c.LogLevel))
		}
	}
	if c.Binding != api.BindingMasquerade && (len(c.Ports) > 0 || c.VMNetworkCIDR != "" || c.VMIPv6NetworkCIDR != "") {
		return nil, types.NewError(types.ErrInvalidNetworkConfig, "virtnet-binding-cni: ports, vmNetworkCIDR and vmIPv6NetworkCIDR are masquerade settings", "binding "+c.Binding)
	}
	for i, p := range c.Ports {
		if p.Port < 1 || p.Port > 65535 {
			return nil, invalid(fmt.Sprintf("ports[%d].port %d: not a port (1 to 65535)", i, p.Port))
		}
		switch p.Protocol {
		case "", "TCP", "UDP":
		default:
			return nil, invalid(fmt.Sprintf("ports[%d].protocol %q: must be TCP or UDP", i, p.Protocol))
		}
	}
	if c.VMNetworkCIDR != "" || c.VMIPv6NetworkCIDR != "" {
		n := &api.Network{Pod: &api.PodNetwork{VMNetworkCIDR: c.VMNetworkCIDR, VMIPv6NetworkCIDR: c.VMIPv6NetworkCIDR}}
		if _, _, err := masquerade.Subnets(n, true, true); err != nil {
			return nil, invalid(err.Error())
		}
	}
	return &c, nil
}

// cacheRoots are where cacheDir may be: the node's tmpfs (the records go
// with a reboot, as the pods do).
var cacheRoots = [...]string{"/run/", "/var/run/"}

// checkCacheDir refuses a cacheDir that is not a clean absolute path under
// /run or /var/run, or whose parent is not an existing directory: the
// plugin creates the cache directory itself, never its parents, so that a
// configuration cannot make root create directories anywhere.
func checkCacheDir(dir string) error {
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir || !slices.ContainsFunc(cacheRoots[:], func(r string) bool { return strings.HasPrefix(dir, r) }) {
		return fmt.Errorf("cacheDir %q: must be a clean absolute path under /run or /var/run", dir)
	}
	fi, err := os.Lstat(filepath.Dir(dir))
	if err != nil || !fi.IsDir() {
		return fmt.Errorf("cacheDir %q: its parent %s must be an existing directory", dir, filepath.Dir(dir))
	}
	return nil
}

// logger is the invocation's logger with attrs (the container ID) on every
// line; phase1 adds the interface, pod interface and binding to its own
// lines (each key once per line).
func (c *netConf) logger(attrs ...any) *slog.Logger {
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: c.level})).With("plugin", "virtnet-binding-cni").With(attrs...)
}

// target is the one VMI interface an invocation is about.
type target struct {
	// iface is the VMI interface (and network) name.
	iface string
	// podIface is the pod link.
	podIface string
	vmi      *api.VMI
}

// uidFor is the key of one interface's records: containers of one pod
// share the container ID, and each interface gets its own records so
// that DEL of one leaves the others.
func uidFor(containerID, iface string) string {
	sum := sha256.Sum256([]byte(containerID + "/" + iface))
	return "cni-" + hex.EncodeToString(sum[:16])
}

// resolve finds the interface and pod link, and builds the one-interface
// VMI phase1 runs on.
func resolve(c *netConf, args *skel.CmdArgs, podIface string, add bool) (*target, error) {
	if args.ContainerID == "" {
		return nil, types.NewError(types.ErrInvalidEnvironmentVariables, "virtnet-binding-cni: CNI_CONTAINERID is empty", "")
	}
	iface := c.Args.CNI.LogicNetworkName
	if iface == "" {
		if c.PrevResult == nil && add {
			return nil, types.NewError(types.ErrInvalidNetworkConfig,
				"virtnet-binding-cni: no args.cni.logicNetworkName and no prevResult: either KubeVirt's binding attachment or a chained conflist is needed", "")
		}
		// Chained: the network is the pod network on eth0, else the
		// interface's own name.
		iface = api.DefaultNetworkName
		if args.IfName != api.PrimaryPodInterface {
			iface = args.IfName
		}
	}
	podIface = cmp.Or(podIface, args.IfName)
	if err := names.CheckLinkName(podIface); err != nil {
		return nil, types.NewError(types.ErrInvalidEnvironmentVariables, "virtnet-binding-cni: pod interface", err.Error())
	}
	t := &target{iface: iface, podIface: podIface}
	ifc := api.Interface{Name: iface, Ports: c.Ports}
	switch c.Binding {
	case api.BindingBridge:
		ifc.Bridge = &struct{}{}
	case api.BindingMasquerade:
		ifc.Masquerade = &struct{}{}
	}
	netw := api.Network{Name: iface}
	annotations := map[string]string{}
	switch podIface {
	case api.PrimaryPodInterface:
		netw.Pod = &api.PodNetwork{VMNetworkCIDR: c.VMNetworkCIDR, VMIPv6NetworkCIDR: c.VMIPv6NetworkCIDR}
	case api.HashedPodInterface(iface):
		netw.Multus = &api.MultusNetwork{NetworkName: iface}
		annotations[api.PodInterfaceNamesAnnotation] = "hashed"
	case api.SecondaryPodInterfacePrefix + "1":
		netw.Multus = &api.MultusNetwork{NetworkName: iface}
	default:
		return nil, types.NewError(types.ErrInvalidEnvironmentVariables,
			fmt.Sprintf("virtnet-binding-cni: pod interface %q is neither eth0, %s (KubeVirt 1.x's name of network %q) nor net1", podIface, api.HashedPodInterface(iface), iface), "")
	}
	if c.Binding == api.BindingMasquerade && netw.Pod == nil && (c.VMNetworkCIDR != "" || c.VMIPv6NetworkCIDR != "") {
		return nil, types.NewError(types.ErrInvalidNetworkConfig, "virtnet-binding-cni: vmNetworkCIDR applies to the pod network only", podIface)
	}
	t.vmi = &api.VMI{
		Kind:     api.KindVMI,
		Metadata: api.ObjectMeta{Name: "virtnet-binding", Namespace: "default", UID: uidFor(args.ContainerID, iface), Annotations: annotations},
		Spec: api.VMISpec{
			Domain:   api.DomainSpec{Devices: api.Devices{Interfaces: []api.Interface{ifc}}},
			Networks: []api.Network{netw},
		},
	}
	api.SetDefaults(t.vmi)
	if err := api.Validate(t.vmi); err != nil {
		return nil, types.NewError(types.ErrInvalidNetworkConfig, "virtnet-binding-cni: "+err.Error(), "")
	}
	return t, nil
}

// podInterfaceForAdd picks the pod link: CNI_IFNAME when chained, else
// KubeVirt 1.x's pod<hash> of the logical network if it exists in the
// namespace, else eth0.
func podInterfaceForAdd(c *netConf, args *skel.CmdArgs) (string, error) {
	if c.PrevResult != nil || c.Args.CNI.LogicNetworkName == "" {
		return args.IfName, nil
	}
	hashed := api.HashedPodInterface(c.Args.CNI.LogicNetworkName)
	_, _, err := kvplugin.ReadAlias(args.Netns, hashed)
	switch {
	case err == nil:
		return hashed, nil
	case errors.Is(err, kvplugin.ErrNoLink):
		return api.PrimaryPodInterface, nil
	default:
		return "", types.NewError(types.ErrInvalidNetNS, "virtnet-binding-cni: network namespace "+args.Netns, err.Error())
	}
}

// phase1Error is err as a CNI error: a permanent phase1 failure is
// codePhase1 with its step, any other CNI's 11; nil stays nil.
func phase1Error(err error) error {
	if err == nil {
		return nil
	}
	details := ""
	var pe *phase1.Error
	if errors.As(err, &pe) {
		details = "step " + pe.Step
		if pe.Interface != "" {
			details += ", interface " + pe.Interface
		}
	}
	code := uint(codePhase1)
	if !phase1.IsPermanent(err) {
		code = types.ErrTryAgainLater
	}
	return types.NewError(code, "virtnet-binding-cni: "+err.Error(), details)
}

// Add is the CNI ADD: phase1 for the interface, the hand-off record, the
// unprivileged port start of a non-root VMI; it prints prevResult
// (chained) or an empty result.
func (p Plugin) Add(args *skel.CmdArgs) error { return p.run(args, p.add) }

func (p Plugin) add(ctx context.Context, args *skel.CmdArgs, c *netConf, store *cache.Store) (err error) {
	podIface, err := podInterfaceForAdd(c, args)
	if err != nil {
		return err
	}
	t, err := resolve(c, args, podIface, true)
	if err != nil {
		return err
	}
	unlock, err := p.lockAttachment(ctx, store, t.vmi.Metadata.UID)
	if err != nil {
		return err
	}
	defer unlock(&err)
	log := c.logger("containerID", args.ContainerID)
	opts := p.options(c, log)
	opts.Attachment = &cache.Attachment{ContainerID: args.ContainerID, IfName: args.IfName, Network: c.Name, AddID: newAddID()}
	if err := phase1.Run(ctx, t.vmi, args.Netns, store, opts); err != nil {
		return phase1Error(err)
	}
	rec, err := handOff(t, args.Netns, store)
	if err == nil && c.needsPortStart(rec) {
		err = lowerPortStart(args.Netns)
	}
	if err != nil {
		return phase1Error(err)
	}
	log.Info("interface ready for the sidecar", "interface", t.iface, "record", rec.Tap)
	return printResult(c)
}

// newAddID is a new [cache.Attachment.AddID].
func newAddID() string {
	return rand.Text()
}

// lockAttachment takes the attachment's lock ([cache.Store.LockAttachment])
// for a whole verb, waiting at most LockWait; unlock releases it and
// reports a failure to do so into *err when it is nil.
func (p Plugin) lockAttachment(ctx context.Context, store *cache.Store, uid string) (unlock func(*error), err error) {
	lctx, cancel := context.WithTimeout(ctx, p.lockWait())
	defer cancel()
	l, err := store.LockAttachment(lctx, uid)
	if err != nil {
		return nil, phase1Error(&phase1.Error{Step: phase1.StepLock, Err: err})
	}
	return func(err *error) {
		if uerr := l.Remove(); uerr != nil && *err == nil {
			*err = phase1Error(&phase1.Error{Step: phase1.StepLock, Err: uerr})
		}
	}, nil
}

func (p Plugin) options(c *netConf, log *slog.Logger) phase1.Options {
	return phase1.Options{Logger: log, TapOwner: c.tapOwner(), LockWait: p.lockWait()}
}

// nonRoot reports whether the taps go to a non-root VMI, whose sidecar
// KubeVirt runs without capabilities.
func (c *netConf) nonRoot() bool { return c.tapOwner().For(nil) != 0 }

// needsPortStart reports whether the sidecar of the interface must bind
// the DHCP ports without a capability: a non-root VMI whose interface
// gets a DHCP server (IPAM on).
func (c *netConf) needsPortStart(rec *cache.Interface) bool {
	return c.nonRoot() && rec != nil && !rec.IPAMDisabled
}

// handOff writes the interface's hand-off record into its tap's alias and
// returns the record.
func handOff(t *target, netns string, store *cache.Store) (*cache.Interface, error) {
	rec, err := store.ReadInterface(t.vmi.Metadata.UID, t.iface)
	if err != nil {
		return nil, err
	}
	alias, err := kvplugin.Encode(rec)
	if err != nil {
		return nil, fmt.Errorf("hand-off record: %w", err)
	}
	return rec, kvplugin.WriteAlias(netns, rec.Tap, alias)
}

// lowerPortStart lets unprivileged processes of the pod bind ports from
// 67 up (the sidecar's DHCP servers); a lower value is kept.
func lowerPortStart(netns string) error {
	return setPortStart(netns, func(cur string) (string, bool) {
		n, err := strconv.Atoi(cur)
		return strconv.Itoa(unprivilegedPortStart), err != nil || n > unprivilegedPortStart
	})
}

// setPortStart sets ip_unprivileged_port_start in netns to the value to
// gives for the current one, if it gives one (ok).
func setPortStart(netns string, to func(cur string) (v string, ok bool)) error {
	d, closeFn, err := kernel.OpenDriver(netns)
	if err != nil {
		return err
	}
	defer func() { _ = closeFn() }()
	cur, err := d.Sysctl(portStartKey)
	if err != nil {
		return err
	}
	if v, ok := to(cur); ok {
		return d.SetSysctl(portStartKey, v)
	}
	return nil
}

// restorePortStart puts ip_unprivileged_port_start back to a new
// namespace's value when it is still the one ADD set and no other
// interface of this store is recorded in the namespace.
func restorePortStart(netns string, store *cache.Store, self string) error {
	fi, err := os.Stat(netns)
	if err != nil {
		return err
	}
	st := fi.Sys().(*syscall.Stat_t)
	id := fmt.Sprintf("%d:%d", st.Dev, st.Ino)
	uids, err := store.VMIs()
	if err != nil {
		return err
	}
	for _, uid := range uids {
		if uid == self {
			continue
		}
		if ns, err := store.RecordedNamespace(uid); err == nil && ns.ID == id {
			return nil // another interface of the pod still needs it
		}
	}
	return setPortStart(netns, func(cur string) (string, bool) {
		return strconv.Itoa(defaultPortStart), cur == strconv.Itoa(unprivilegedPortStart)
	})
}

func printResult(c *netConf) error {
	if c.PrevResult != nil {
		res, err := current.NewResultFromResult(c.PrevResult)
		if err != nil {
			return types.NewError(types.ErrDecodingFailure, "virtnet-binding-cni: prevResult", err.Error())
		}
		return types.PrintResult(res, c.CNIVersion)
	}
	return types.PrintResult(&current.Result{CNIVersion: current.ImplementedSpecVersion}, c.CNIVersion)
}

// lockRecorded takes the lock of the attachment args name
// ([Plugin.lockAttachment]), for DEL and CHECK.
func (p Plugin) lockRecorded(ctx context.Context, c *netConf, args *skel.CmdArgs, store *cache.Store) (unlock func(*error), err error) {
	probe, err := resolve(c, args, api.PrimaryPodInterface, false)
	if err != nil {
		return nil, err
	}
	return p.lockAttachment(ctx, store, probe.vmi.Metadata.UID)
}

// recordedTarget rebuilds the target of an earlier ADD from its records.
// When there was none, found is false and the target is a probe on eth0:
// its UID, the key of the interface's records, is still right.
func recordedTarget(c *netConf, args *skel.CmdArgs, store *cache.Store) (t *target, found bool, err error) {
	probe, err := resolve(c, args, api.PrimaryPodInterface, false)
	if err != nil {
		return nil, false, err
	}
	pod, err := store.ReadProgress(probe.vmi.Metadata.UID, probe.iface)
	if errors.Is(err, cache.ErrNotExist) {
		return probe, false, nil
	}
	if err != nil {
		return nil, false, cacheError(err)
	}
	t, err = resolve(c, args, pod.PodInterface, false)
	return t, true, err
}

// Del is the CNI DEL: phase1's cleanup, or only forgetting the records when
// the namespace is gone (no file, or a file that is no longer a network
// namespace: a stale bind mount); without an ADD it succeeds. A namespace
// other than the one the records describe is refused (permanent).
func (p Plugin) Del(args *skel.CmdArgs) error { return p.run(args, p.del) }

func (p Plugin) del(ctx context.Context, args *skel.CmdArgs, c *netConf, store *cache.Store) (err error) {
	if _, err := store.RemoveStaleLocks(); err != nil {
		return cacheError(err)
	}
	unlock, err := p.lockRecorded(ctx, c, args, store)
	if err != nil {
		return err
	}
	defer unlock(&err)
	t, found, err := recordedTarget(c, args, store)
	if err != nil {
		return err
	}
	if !found {
		// DEL without ADD, or after an ADD killed before its first
		// record: forget what it may have left (a namespace record,
		// temporary files).
		return phase1Error(forget(ctx, store, t.vmi.Metadata.UID, p.lockWait()))
	}
	log := c.logger("containerID", args.ContainerID)
	if args.Netns == "" || !isNetns(args.Netns) {
		// The pod's namespace is gone and everything in it with it.
		log.Info("namespace gone; forgetting the records", "interface", t.iface, "netns", args.Netns)
		return phase1Error(forget(ctx, store, t.vmi.Metadata.UID, p.lockWait()))
	}
	if err := phase1.Cleanup(ctx, t.vmi, args.Netns, store, p.options(c, log)); err != nil {
		return phase1Error(err)
	}
	if c.nonRoot() {
		if err := restorePortStart(args.Netns, store, t.vmi.Metadata.UID); err != nil {
			log.Warn("could not restore ip_unprivileged_port_start", "error", err)
		}
	}
	log.Info("interface cleaned up", "interface", t.iface)
	return nil
}

// forget deletes a VMI's records under its lock.
func forget(ctx context.Context, store *cache.Store, uid string, wait time.Duration) error {
	lctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	l, err := store.LockVMI(lctx, uid)
	if err != nil {
		return &phase1.Error{Step: phase1.StepLock, Err: err}
	}
	err = store.DeleteVMI(uid)
	if rerr := l.Remove(); err == nil {
		err = rerr
	}
	if err != nil {
		return &phase1.Error{Step: phase1.StepCleanup, Err: err}
	}
	return nil
}

// isNetns reports whether p is a network namespace file (nsfs).
func isNetns(p string) bool {
	var fs unix.Statfs_t
	return unix.Statfs(p, &fs) == nil && fs.Type == unix.NSFS_MAGIC
}

// Check is the CNI CHECK: it verifies phase1's records, the kernel state
// and the hand-off record without changing anything.
func (p Plugin) Check(args *skel.CmdArgs) error { return p.run(args, p.checkVerb) }

func (p Plugin) checkVerb(ctx context.Context, args *skel.CmdArgs, c *netConf, store *cache.Store) (err error) {
	unlock, err := p.lockRecorded(ctx, c, args, store)
	if err != nil {
		return err
	}
	defer unlock(&err)
	t, found, err := recordedTarget(c, args, store)
	if err != nil {
		return err
	}
	if !found {
		return types.NewError(codePhase1, "virtnet-binding-cni: CHECK: no ADD recorded for this interface", args.ContainerID)
	}
	if err := p.check(ctx, c, t, args.Netns, store); err != nil {
		code := uint(codePhase1)
		if errors.Is(err, phase1.ErrLocked) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			code = types.ErrTryAgainLater // another run, or out of time: not a verdict
		}
		return types.NewError(code, "virtnet-binding-cni: CHECK: "+err.Error(), "")
	}
	return nil
}

// GC is the CNI GC (CNI 1.1): it forgets the records of every attachment
// of this network (the configuration's name) that this plugin recorded
// (in cacheDir) and that is not in cni.dev/valid-attachments, and removes
// lock files no run holds. The list names the valid attachments of this
// network only: records of another network sharing the cacheDir, or
// without a network name, are left alone. The namespaces of those
// attachments are gone, and everything phase1 made in them with them.
//
// An attachment that is mid-verb (its lock held: an ADD, DEL or CHECK
// under way) when GC looks at it, or that an ADD touched after that (its
// namespace record's AddID changed), is never collected, whatever the
// list says: the list may predate the ADD. A record directory of this
// plugin without a namespace record (a GC or DEL killed inside its
// deletion, an ADD killed at its first rename) belongs to no live
// attachment and is removed, whichever network made it, once no run
// holds its lock.
func (p Plugin) GC(args *skel.CmdArgs) error { return p.run(args, p.gc) }

// gcCandidate is a record directory GC means to forget, with what it
// found there before ([cache.Namespace] nil: no namespace record).
type gcCandidate struct {
	uid string
	ns  *cache.Namespace
}

func (p Plugin) gc(ctx context.Context, args *skel.CmdArgs, c *netConf, store *cache.Store) error {
	type key struct{ containerID, ifName string }
	valid := map[key]bool{}
	for _, a := range c.ValidAttachments {
		valid[key{a.ContainerID, a.IfName}] = true
	}
	uids, err := store.VMIs()
	if err != nil {
		return cacheError(err)
	}
	log := c.logger()
	skip := func(ns *cache.Namespace) bool {
		// Not an attachment of this plugin and network, or a valid one.
		return ns.Attachment == nil || ns.Attachment.Network != c.Name || valid[key{ns.Attachment.ContainerID, ns.Attachment.IfName}]
	}
	// Look at every directory first, each under its attachment's lock:
	// what is mid-verb now is skipped, and what is looked at is compared
	// again before it is forgotten. A record read without the lock only
	// decides to leave a directory (a record is replaced whole, never
	// written in place, so the read sees one ADD's record or another's): a
	// node's valid attachments cost GC one read each, not a lock file made
	// and removed.
	var candidates []gcCandidate
	for _, uid := range uids {
		if ns, err := store.RecordedNamespace(uid); err == nil && skip(ns) {
			continue
		}
		ns, busy, err := peekAttachment(ctx, store, uid)
		switch {
		case busy:
			log.Debug("GC: attachment busy (a verb under way); left", "uid", uid)
			continue
		case err != nil:
			log.Warn("GC: cannot read a record directory; left", "uid", uid, "error", err)
			continue
		case ns == nil:
			if !isAttachmentUID(uid) {
				continue // not this plugin's
			}
		case skip(ns):
			continue
		}
		candidates = append(candidates, gcCandidate{uid: uid, ns: ns})
	}
	if p.gcLooked != nil {
		p.gcLooked()
	}
	var errs []error
	for _, cand := range candidates {
		forgot, err := p.collect(ctx, store, cand)
		switch {
		case err != nil:
			errs = append(errs, err)
		case !forgot:
			log.Info("GC: attachment busy or added since the GC began; left", "uid", cand.uid)
		case cand.ns == nil:
			log.Info("GC: removed a record directory without a namespace record", "uid", cand.uid)
		default:
			log.Info("GC: forgot the records of a gone attachment", "containerID", cand.ns.Attachment.ContainerID, "ifname", cand.ns.Attachment.IfName)
		}
	}
	if _, err := store.RemoveStaleLocks(); err != nil {
		errs = append(errs, err)
	}
	return phase1Error(errors.Join(errs...))
}

// peekAttachment reads the namespace record of uid (nil when there is
// none) under the attachment's lock, taken without waiting; busy when
// another run holds it.
func peekAttachment(ctx context.Context, store *cache.Store, uid string) (ns *cache.Namespace, busy bool, err error) {
	l, err := lockNow(ctx, store, uid)
	if l == nil {
		return nil, errors.Is(err, cache.ErrLocked), err
	}
	defer func() {
		if rerr := l.Remove(); err == nil {
			err = rerr
		}
	}()
	ns, err = store.RecordedNamespace(uid)
	if errors.Is(err, cache.ErrNotExist) {
		return nil, false, nil
	}
	return ns, false, err
}

// lockNow takes the attachment's lock of uid without waiting.
func lockNow(ctx context.Context, store *cache.Store, uid string) (*cache.Lock, error) {
	now, cancel := context.WithCancel(ctx)
	cancel() // one try ([cache.Store.LockAttachment] always tries once)
	return store.LockAttachment(now, uid)
}

// collect forgets the records of cand under the attachment's lock, unless
// a run holds the lock or the namespace record is no longer the one GC
// looked at (an ADD ran since).
func (p Plugin) collect(ctx context.Context, store *cache.Store, cand gcCandidate) (forgot bool, err error) {
	l, err := lockNow(ctx, store, cand.uid)
	if errors.Is(err, cache.ErrLocked) {
		return false, nil
	}
	if err != nil {
		return false, &phase1.Error{Step: phase1.StepLock, Err: err}
	}
	defer func() {
		if rerr := l.Remove(); err == nil && rerr != nil {
			err = &phase1.Error{Step: phase1.StepLock, Err: rerr}
		}
	}()
	now, err := store.RecordedNamespace(cand.uid)
	switch {
	case errors.Is(err, cache.ErrNotExist):
		now = nil
	case err != nil:
		return false, &phase1.Error{Step: phase1.StepRead, Err: err}
	}
	if !sameNamespaceRecord(cand.ns, now) {
		return false, nil
	}
	if err := forget(ctx, store, cand.uid, p.lockWait()); err != nil {
		return false, err
	}
	return true, nil
}

// sameNamespaceRecord reports whether two reads of a namespace record
// (nil: none) found the same record.
func sameNamespaceRecord(a, b *cache.Namespace) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.ID != b.ID || (a.Attachment == nil) != (b.Attachment == nil) {
		return false
	}
	return a.Attachment == nil || *a.Attachment == *b.Attachment
}

// isAttachmentUID reports whether uid has the form of [uidFor]'s keys:
// a record directory this plugin made.
func isAttachmentUID(uid string) bool {
	h, ok := strings.CutPrefix(uid, "cni-")
	if !ok || len(h) != 32 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil && strings.ToLower(h) == h
}

// errWouldChange fails a kernel call or record write in CHECK's dry run.
var errWouldChange = errors.New("CHECK changes nothing")

// check verifies, without changing anything, that ADD would change
// nothing: phase1 runs again with a driver that refuses every mutating
// kernel call and a store that refuses every write, so that anything ADD
// would repair (a bridge or tap gone or moved, the NAT tables, the
// gateway address, forwarding and the other sysctls, a record) fails the
// check naming it; then the hand-off record on the tap, and, for a
// non-root VMI, that the sidecar may bind the DHCP ports.
func (p Plugin) check(ctx context.Context, c *netConf, t *target, netns string, store *cache.Store) error {
	uid := t.vmi.Metadata.UID
	pod, err := store.ReadProgress(uid, t.iface)
	if err != nil {
		return err
	}
	if pod.State != cache.Finished {
		return fmt.Errorf("phase1 is %s, not finished", pod.State)
	}
	rec, err := store.ReadInterface(uid, t.iface)
	if err != nil {
		return err
	}
	nl, err := kernel.Open(netns)
	if err != nil {
		return err
	}
	defer nl.Close()
	var would []string
	dry := &intercept.Driver{Inner: nl, Before: func(call intercept.Call) error {
		if call.Mutating {
			would = append(would, call.Method)
			return errWouldChange
		}
		return nil
	}}
	ro := store.WithHook(func(step cache.WriteStep, tmp, path string) error {
		if step == cache.WriteTempCreated {
			would = append(would, "write "+filepath.Base(path))
			return errWouldChange
		}
		return nil
	})
	opts := p.options(c, slog.New(slog.DiscardHandler))
	opts.Driver, opts.KeepOnFailure = dry, true
	if err := phase1.Run(ctx, t.vmi, netns, ro, opts); err != nil {
		if len(would) > 0 {
			return fmt.Errorf("ADD would repair the namespace (%s): %w", strings.Join(would, ", "), err)
		}
		return err
	}
	want, err := kvplugin.Encode(rec)
	if err != nil {
		return err
	}
	got, _, err := kvplugin.ReadAlias(netns, rec.Tap)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("tap %s: hand-off record %q differs from phase1's records (%q)", rec.Tap, got, want)
	}
	if c.needsPortStart(rec) {
		v, err := nl.Sysctl(portStartKey)
		if err != nil {
			return err
		}
		if n, err := strconv.Atoi(v); err != nil || n > unprivilegedPortStart {
			return fmt.Errorf("net.%s is %s: the sidecar (uid %d, no capabilities) cannot bind the DHCP port 67",
				strings.ReplaceAll(portStartKey, "/", "."), v, c.tapOwner().For(nil))
		}
	}
	return nil
}

// run is what every verb begins with: the configuration, the store in
// its cacheDir (a failure is a CNI I/O error) and the invocation's
// deadline.
func (p Plugin) run(args *skel.CmdArgs, verb func(context.Context, *skel.CmdArgs, *netConf, *cache.Store) error) error {
	c, err := loadConf(args.StdinData)
	if err != nil {
		return err
	}
	store, err := cache.New(c.CacheDir)
	if err != nil {
		return cacheError(err)
	}
	if p.storeHook != nil {
		store = store.WithHook(p.storeHook)
	}
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return verb(ctx, args, c, store)
}

// cacheError is a failure of cacheDir as a CNI I/O error.
func cacheError(err error) *types.Error {
	return types.NewError(types.ErrIOFailure, "virtnet-binding-cni: cache", err.Error())
}
