//go:build linux

// Package cniplugin is the CNI plugin of virtnet's KubeVirt 1.x network
// binding plugins (cmd/virtnet-binding-cni is its main): [Add] runs
// phase1 for one VM interface in CNI_NETNS and leaves the hand-off record
// on the interface's tap, [Del] undoes it, [Check] verifies it. See the
// command's documentation for the network configuration.
package cniplugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"

	"github.com/virtnet/virtnet/netdriver/kernel"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/internal/kvplugin"
	"github.com/virtnet/virtnet/internal/names"
	"github.com/virtnet/virtnet/netdriver"
	"github.com/virtnet/virtnet/phase1"
)

// DefaultCacheDir holds phase1's records on the node (tmpfs: they go with
// a reboot, as the pods do).
const DefaultCacheDir = "/run/virtnet-binding"

// Plugin-specific CNI error codes (CNI reserves 0-99).
const (
	// codePhase1 is a failure of phase1 in the pod namespace.
	codePhase1 = 999
)

// unprivilegedPortStart is where the CNI plugin lowers
// net.ipv4.ip_unprivileged_port_start in the pod namespace, so that the
// sidecar (uid 107, no capabilities on a non-root VMI) can bind the DHCP
// server ports 67 and 547.
const unprivilegedPortStart = 67

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
}

func loadConf(data []byte) (*netConf, error) {
	var c netConf
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, types.NewError(types.ErrDecodingFailure, "virtnet-binding-cni: network configuration is not JSON", err.Error())
	}
	if err := version.ParsePrevResult(&c.NetConf); err != nil {
		return nil, types.NewError(types.ErrDecodingFailure, "virtnet-binding-cni: prevResult", err.Error())
	}
	switch c.Binding {
	case api.BindingBridge, api.BindingMasquerade:
	default:
		return nil, types.NewError(types.ErrInvalidNetworkConfig,
			fmt.Sprintf("virtnet-binding-cni: binding %q: must be %q or %q (slirp needs no CNI plugin)", c.Binding, api.BindingBridge, api.BindingMasquerade), "")
	}
	if c.TapOwner != nil && (*c.TapOwner < 0 || *c.TapOwner > 1<<31-2) {
		return nil, types.NewError(types.ErrInvalidNetworkConfig, fmt.Sprintf("virtnet-binding-cni: tapOwner %d: not a uid", *c.TapOwner), "")
	}
	if c.CacheDir == "" {
		c.CacheDir = DefaultCacheDir
	}
	if c.Binding != api.BindingMasquerade && (len(c.Ports) > 0 || c.VMNetworkCIDR != "" || c.VMIPv6NetworkCIDR != "") {
		return nil, types.NewError(types.ErrInvalidNetworkConfig, "virtnet-binding-cni: ports, vmNetworkCIDR and vmIPv6NetworkCIDR are masquerade settings", "binding "+c.Binding)
	}
	return &c, nil
}

func (c *netConf) logger() *slog.Logger {
	level := slog.LevelInfo
	if c.LogLevel != "" {
		_ = level.UnmarshalText([]byte(c.LogLevel))
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level})).With("plugin", "virtnet-binding-cni")
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
	if podIface == "" {
		podIface = args.IfName
	}
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

func phase1Error(err error) error {
	var te *types.Error
	if errors.As(err, &te) {
		return te
	}
	details := ""
	var pe *phase1.Error
	if errors.As(err, &pe) {
		details = "step " + pe.Step
		if pe.Interface != "" {
			details += ", interface " + pe.Interface
		}
	}
	return types.NewError(codePhase1, "virtnet-binding-cni: "+err.Error(), details)
}

// Add is the CNI ADD: phase1 for the interface, the hand-off record, the
// unprivileged port start; it prints prevResult (chained) or an empty
// result.
func Add(args *skel.CmdArgs) error {
	c, err := loadConf(args.StdinData)
	if err != nil {
		return err
	}
	ctx := context.Background()
	podIface, err := podInterfaceForAdd(c, args)
	if err != nil {
		return err
	}
	t, err := resolve(c, args, podIface, true)
	if err != nil {
		return err
	}
	log := c.logger().With("containerID", args.ContainerID, "interface", t.iface, "podInterface", t.podIface)
	store, err := cache.New(c.CacheDir)
	if err != nil {
		return types.NewError(types.ErrIOFailure, "virtnet-binding-cni: cache", err.Error())
	}
	if err := phase1.Run(ctx, t.vmi, args.Netns, store, phase1.Options{Logger: log, TapOwner: c.tapOwner()}); err != nil {
		return phase1Error(err)
	}
	if err := handOff(t, args.Netns, store); err != nil {
		return phase1Error(err)
	}
	if err := lowerPortStart(args.Netns); err != nil {
		return phase1Error(err)
	}
	log.Info("interface ready for the sidecar", "record", kvplugin.TapOf(t.podIface, t.podIface == api.PrimaryPodInterface))
	return printResult(c)
}

// handOff writes the interface's hand-off record into its tap's alias.
func handOff(t *target, netns string, store *cache.Store) error {
	rec, err := store.ReadInterface(t.vmi.Metadata.UID, t.iface)
	if err != nil {
		return err
	}
	alias, err := kvplugin.Encode(rec)
	if err != nil {
		return fmt.Errorf("hand-off record: %w", err)
	}
	return kvplugin.WriteAlias(netns, rec.Tap, alias)
}

// lowerPortStart lets unprivileged processes of the pod bind ports from
// 67 up (the sidecar's DHCP servers); a lower value is kept.
func lowerPortStart(netns string) error {
	d, closeFn, err := kernel.OpenDriver(netns)
	if err != nil {
		return err
	}
	defer func() { _ = closeFn() }()
	const key = "ipv4/ip_unprivileged_port_start"
	cur, err := d.Sysctl(key)
	if err != nil {
		return err
	}
	if n, err := strconv.Atoi(cur); err == nil && n <= unprivilegedPortStart {
		return nil
	}
	return d.SetSysctl(key, strconv.Itoa(unprivilegedPortStart))
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

// recordedTarget rebuilds the target of an earlier ADD from its records,
// or returns nil when there was none.
func recordedTarget(c *netConf, args *skel.CmdArgs, store *cache.Store) (*target, error) {
	probe, err := resolve(c, args, api.PrimaryPodInterface, false)
	if err != nil {
		return nil, err
	}
	pod, err := store.ReadProgress(probe.vmi.Metadata.UID, probe.iface)
	if errors.Is(err, cache.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, types.NewError(types.ErrIOFailure, "virtnet-binding-cni: cache", err.Error())
	}
	return resolve(c, args, pod.PodInterface, false)
}

// Del is the CNI DEL: phase1's cleanup, or only forgetting the records when
// the namespace is gone; without an ADD it succeeds.
func Del(args *skel.CmdArgs) error {
	c, err := loadConf(args.StdinData)
	if err != nil {
		return err
	}
	store, err := cache.New(c.CacheDir)
	if err != nil {
		return types.NewError(types.ErrIOFailure, "virtnet-binding-cni: cache", err.Error())
	}
	t, err := recordedTarget(c, args, store)
	if err != nil || t == nil {
		return err // nil: DEL without ADD
	}
	log := c.logger().With("containerID", args.ContainerID, "interface", t.iface, "podInterface", t.podIface)
	if args.Netns == "" || !exists(args.Netns) {
		// The pod's namespace is gone and everything in it with it.
		log.Info("namespace gone; forgetting the records")
		if err := store.DeleteVMI(t.vmi.Metadata.UID); err != nil {
			return types.NewError(types.ErrIOFailure, "virtnet-binding-cni: cache", err.Error())
		}
		return nil
	}
	if err := phase1.Cleanup(context.Background(), t.vmi, args.Netns, store, phase1.Options{Logger: log, TapOwner: c.tapOwner()}); err != nil {
		return phase1Error(err)
	}
	log.Info("interface cleaned up")
	return nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Check is the CNI CHECK: it verifies phase1's records, the kernel state
// and the hand-off record without changing anything.
func Check(args *skel.CmdArgs) error {
	c, err := loadConf(args.StdinData)
	if err != nil {
		return err
	}
	store, err := cache.New(c.CacheDir)
	if err != nil {
		return types.NewError(types.ErrIOFailure, "virtnet-binding-cni: cache", err.Error())
	}
	t, err := recordedTarget(c, args, store)
	if err != nil {
		return err
	}
	if t == nil {
		return types.NewError(codePhase1, "virtnet-binding-cni: CHECK: no ADD recorded for this interface", args.ContainerID)
	}
	if err := check(t, args.Netns, store); err != nil {
		return types.NewError(codePhase1, "virtnet-binding-cni: CHECK: "+err.Error(), "")
	}
	return nil
}

// check verifies, without changing anything, that phase1 finished, that
// the bridge and the tap are there and joined, and that the tap carries
// the hand-off record of the recorded interface.
func check(t *target, netns string, store *cache.Store) error {
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
	d, closeFn, err := kernel.OpenDriver(netns)
	if err != nil {
		return err
	}
	defer func() { _ = closeFn() }()
	br, err := d.LinkByName(rec.Bridge)
	if err != nil {
		return fmt.Errorf("bridge %s: %w", rec.Bridge, err)
	}
	if br.Type != netdriver.TypeBridge || !br.Up {
		return fmt.Errorf("bridge %s: type %s, up %v", rec.Bridge, br.Type, br.Up)
	}
	tap, err := d.LinkByName(rec.Tap)
	if err != nil {
		return fmt.Errorf("tap %s: %w", rec.Tap, err)
	}
	if tap.Type != netdriver.TypeTuntap || tap.Master != rec.Bridge {
		return fmt.Errorf("tap %s: type %s, master %q (want %s)", rec.Tap, tap.Type, tap.Master, rec.Bridge)
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
	return nil
}
