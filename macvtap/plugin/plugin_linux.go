package plugin

import (
	"cmp"
	"log/slog"

	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/containernetworking/cni/pkg/skel"
	current "github.com/containernetworking/cni/pkg/types/100"
	cniversion "github.com/containernetworking/cni/pkg/version"
	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"

	"github.com/virtnet/virtnet/internal/nlhandle"
	"github.com/virtnet/virtnet/macvtap"
	"github.com/virtnet/virtnet/macvtap/cniconfig"
)

// nlModes maps our modes to netlink's.
var nlModes = map[macvtap.Mode]netlink.MacvlanMode{
	macvtap.ModeBridge:   netlink.MACVLAN_MODE_BRIDGE,
	macvtap.ModeVEPA:     netlink.MACVLAN_MODE_VEPA,
	macvtap.ModePrivate:  netlink.MACVLAN_MODE_PRIVATE,
	macvtap.ModePassthru: netlink.MACVLAN_MODE_PASSTHRU,
}

func isNotFound(err error) bool {
	var nf netlink.LinkNotFoundError
	return errors.As(err, &nf)
}

// hostHandle opens a netlink handle in the host namespace.
func (p *Plugin) hostHandle() (*netlink.Handle, error) {
	return nlhandle.Open(p.HostNetNS)
}

// containerHandle opens args.Netns and a netlink handle in it.
func containerHandle(path string) (ns.NetNS, *netlink.Handle, error) {
	target, err := ns.GetNS(path)
	if err != nil {
		var gone ns.NSPathNotExistErr
		var notNS ns.NSPathNotNSErr
		switch {
		case errors.As(err, &gone):
			err = fmt.Errorf("%w: %w", ErrNetNSGone, err)
		case errors.As(err, &notNS):
			err = fmt.Errorf("%w: %w", ErrNotNetNS, err)
		}
		return nil, nil, err
	}
	h, err := nlhandle.Open(target.Path())
	if err != nil {
		_ = target.Close()
		return nil, nil, err
	}
	return target, h, nil
}

// Setup moves and configures the macvtap for args (see the package
// documentation) and returns the result in the current CNI spec version.
func (p *Plugin) Setup(ctx context.Context, args *skel.CmdArgs) (*current.Result, error) {
	const verb = "ADD"
	fail := func(step, link, nsPath string, err error) error {
		return &Error{Verb: verb, Step: step, Link: link, NetNS: nsPath, Err: err}
	}
	conf, err := cniconfig.Parse(args.StdinData)
	if err != nil {
		return nil, err
	}
	mac, err := conf.EffectiveMAC(args.Args)
	if err != nil {
		return nil, err
	}
	if err := macvtap.ValidIfName(args.IfName); err != nil {
		return nil, fail("check CNI_IFNAME", args.IfName, "", fmt.Errorf("%w: %w", ErrBadIfName, err))
	}
	log := p.log().With("containerID", args.ContainerID, "netns", args.Netns, "ifname", args.IfName, "deviceID", conf.DeviceID)

	target, cont, err := containerHandle(args.Netns)
	if err != nil {
		return nil, fail("open container netns", "", args.Netns, err)
	}
	defer func() { _ = target.Close() }()
	defer cont.Close()
	host, err := p.hostHandle()
	if err != nil {
		return nil, fail("open host netns", "", p.HostNetNS, err)
	}
	defer host.Close()

	if _, err := cont.LinkByName(args.IfName); err == nil {
		return nil, fail("check CNI_IFNAME", args.IfName, args.Netns, ErrIfaceExists)
	} else if !isNotFound(err) {
		return nil, fail("look up", args.IfName, args.Netns, err)
	}

	mv, created, err := p.hostMacvtap(host, conf, log)
	if err != nil {
		return nil, err
	}
	name := mv.Attrs().Name

	// Undo on failure: see the package documentation.
	var (
		moved, done bool
		ipamRan     bool
	)
	defer func() {
		if done {
			return
		}
		if ipamRan {
			if err := p.ipamExec(context.WithoutCancel(ctx), "DEL", conf, args); err != nil {
				log.Warn("macvtap ADD: undo: IPAM DEL failed", "err", err)
			}
		}
		switch {
		case moved:
			for _, n := range []string{args.IfName, name} {
				if l, err := cont.LinkByName(n); err == nil && l.Type() == "macvtap" {
					if err := cont.LinkDel(l); err != nil {
						log.Warn("macvtap ADD: undo: delete link in container", "link", n, "err", err)
					}
					break
				}
			}
		case created:
			if err := host.LinkDel(mv); err != nil {
				log.Warn("macvtap ADD: undo: delete created link on host", "link", name, "err", err)
			}
		}
	}()

	if want := conf.MacvtapMode; want != "" && !created && mv.Mode != nlModes[want] {
		// ip link set NAME type macvtap mode WANT
		// Name only, no index: with an ifindex the kernel also "renames" the
		// link to its own name, which it refuses with EBUSY while the link is
		// up; NewLinkAttrs leaves txqueuelen (-1) and the rest untouched.
		la := netlink.NewLinkAttrs()
		la.Name = name
		mod := &netlink.Macvtap{Macvlan: netlink.Macvlan{LinkAttrs: la, Mode: nlModes[want]}}
		if err := host.LinkModify(mod); err != nil {
			return nil, fail("set mode "+string(want)+" on", name, p.HostNetNS, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fail("move", name, args.Netns, err)
	}
	// ip link set NAME netns CONTAINER
	if err := host.LinkSetNsFd(mv, int(target.Fd())); err != nil {
		return nil, fail("move to container", name, args.Netns, err)
	}
	moved = true

	l, err := cont.LinkByName(name)
	if err != nil {
		return nil, fail("look up moved link", name, args.Netns, err)
	}
	if conf.MTU != 0 {
		// ip link set NAME mtu MTU
		if err := cont.LinkSetMTU(l, conf.MTU); err != nil {
			return nil, fail("set MTU "+strconv.Itoa(conf.MTU)+" on", name, args.Netns, err)
		}
	}
	if mac != nil {
		// ip link set NAME address MAC
		if err := cont.LinkSetHardwareAddr(l, mac); err != nil {
			return nil, fail("set MAC "+mac.String()+" on", name, args.Netns, err)
		}
	}
	if conf.PromiscMode {
		// ip link set NAME promisc on
		if err := cont.SetPromiscOn(l); err != nil {
			return nil, fail("set promiscuous mode on", name, args.Netns, err)
		}
	}
	if name != args.IfName {
		// ip link set NAME name CNI_IFNAME
		if err := cont.LinkSetName(l, args.IfName); err != nil {
			return nil, fail("rename to "+args.IfName, name, args.Netns, err)
		}
	}
	l, err = cont.LinkByName(args.IfName)
	if err != nil {
		return nil, fail("look up renamed link", args.IfName, args.Netns, err)
	}
	// ip link set CNI_IFNAME up
	if err := cont.LinkSetUp(l); err != nil {
		return nil, fail("set up", args.IfName, args.Netns, err)
	}
	if l, err = cont.LinkByName(args.IfName); err != nil {
		return nil, fail("read back", args.IfName, args.Netns, err)
	}
	p.chownTap(l.Attrs().Index, conf, log)

	res := &current.Result{
		CNIVersion: current.ImplementedSpecVersion,
		Interfaces: []*current.Interface{{
			Name:    args.IfName,
			Mac:     l.Attrs().HardwareAddr.String(),
			Mtu:     l.Attrs().MTU,
			Sandbox: target.Path(),
		}},
	}
	if conf.IPAM.Type != "" {
		ipamRan = true
		ipamRes, err := p.ipamAdd(ctx, conf, args)
		if err != nil {
			return nil, err
		}
		idx := 0
		for _, ip := range ipamRes.IPs {
			ip.Interface = &idx
		}
		res.IPs, res.Routes, res.DNS = ipamRes.IPs, ipamRes.Routes, ipamRes.DNS
	}
	done = true
	log.Info("macvtap ADD done", "hostLink", name, "created", created, "mac", res.Interfaces[0].Mac, "mtu", l.Attrs().MTU)
	return res, nil
}

// hostMacvtap finds (or creates) the host macvtap of conf.DeviceID; see the
// package documentation for the rule.
func (p *Plugin) hostMacvtap(host *netlink.Handle, conf *cniconfig.NetConf, log interface {
	Info(string, ...any)
}) (*netlink.Macvtap, bool, error) {
	var notMacvtap string
	for _, cand := range macvtap.HostLinkCandidates(conf.DeviceID) {
		l, err := host.LinkByName(cand)
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return nil, false, &Error{Verb: "ADD", Step: "look up host link", Link: cand, NetNS: p.HostNetNS, Err: err}
		}
		if mv, ok := l.(*netlink.Macvtap); ok {
			return mv, false, nil
		}
		if notMacvtap == "" {
			notMacvtap = cand + " (" + l.Type() + ")"
		}
	}
	if conf.LowerDevice == "" {
		if notMacvtap != "" {
			return nil, false, &Error{Verb: "ADD", Step: "take host link for deviceID " + conf.DeviceID, Link: notMacvtap, Err: ErrNotMacvtap}
		}
		return nil, false, &Error{Verb: "ADD", Step: "find host link for deviceID", Link: conf.DeviceID,
			Err: fmt.Errorf("%w (looked for %v; set lowerDevice to let the plugin create one)", ErrDeviceNotFound, macvtap.HostLinkCandidates(conf.DeviceID))}
	}
	lower, err := host.LinkByName(conf.LowerDevice)
	if err != nil {
		return nil, false, &Error{Verb: "ADD", Step: "look up lowerDevice", Link: conf.LowerDevice, NetNS: p.HostNetNS, Err: err}
	}
	mode := cmp.Or(conf.MacvtapMode, macvtap.DefaultMode)
	name := macvtap.HostLinkName(conf.DeviceID)
	la := netlink.NewLinkAttrs()
	la.Name = name
	la.ParentIndex = lower.Attrs().Index
	// kubevirt/macvtap-cni saw crashes with txqueuelen 0; copy the lower's.
	la.TxQLen = lower.Attrs().TxQLen
	// ip link add NAME link LOWER txqueuelen N type macvtap mode MODE
	if err := host.LinkAdd(&netlink.Macvtap{Macvlan: netlink.Macvlan{LinkAttrs: la, Mode: nlModes[mode]}}); err != nil {
		return nil, false, &Error{Verb: "ADD", Step: "create macvtap on " + conf.LowerDevice + " in mode " + string(mode), Link: name, NetNS: p.HostNetNS, Err: err}
	}
	l, err := host.LinkByName(name)
	if err != nil {
		return nil, false, &Error{Verb: "ADD", Step: "look up created macvtap", Link: name, NetNS: p.HostNetNS, Err: err}
	}
	mv, ok := l.(*netlink.Macvtap)
	if !ok {
		return nil, false, &Error{Verb: "ADD", Step: "look up created macvtap", Link: name, Err: ErrNotMacvtap}
	}
	log.Info("macvtap ADD: created host macvtap", "link", name, "lowerDevice", conf.LowerDevice, "mode", mode)
	return mv, true, nil
}

// chownTap gives /dev/tap<index> to the configured owner; see the package
// documentation for why a missing node is only a warning.
func (p *Plugin) chownTap(index int, conf *cniconfig.NetConf, log interface {
	Warn(string, ...any)
}) {
	path := filepath.Join(p.devDir(), "tap"+strconv.Itoa(index))
	err := os.Chown(path, conf.OwnerID(), conf.GroupID())
	if err != nil {
		log.Warn("macvtap ADD: cannot chown tap device; QEMU running as that user will not open it",
			"path", path, "owner", conf.OwnerID(), "group", conf.GroupID(), "err", err)
	}
}

// Teardown deletes the macvtap of args; it is idempotent.
func (p *Plugin) Teardown(ctx context.Context, args *skel.CmdArgs) error {
	conf, err := cniconfig.Parse(args.StdinData)
	if err != nil {
		return err
	}
	log := p.log().With("containerID", args.ContainerID, "netns", args.Netns, "ifname", args.IfName)
	// DEL is best effort: an IPAM failure does not keep the macvtap.
	var ipamErr error
	if conf.IPAM.Type != "" {
		ipamErr = p.ipamExec(ctx, "DEL", conf, args)
	}
	if err := p.deleteLink(args, log); err != nil {
		return errors.Join(ipamErr, err)
	}
	return ipamErr
}

// deleteLink removes the macvtap from the container; a gone namespace or
// link is success.
func (p *Plugin) deleteLink(args *skel.CmdArgs, log *slog.Logger) error {
	const verb = "DEL"
	if args.Netns == "" {
		return nil
	}
	target, cont, err := containerHandle(args.Netns)
	if err != nil {
		if errors.Is(err, ErrNetNSGone) || errors.Is(err, ErrNotNetNS) {
			// The runtime already tore the sandbox down; the macvtap died with it.
			log.Info("macvtap DEL: netns gone, nothing to do", "err", err)
			return nil
		}
		return &Error{Verb: verb, Step: "open container netns", NetNS: args.Netns, Err: err}
	}
	defer func() { _ = target.Close() }()
	defer cont.Close()
	l, err := cont.LinkByName(args.IfName)
	if isNotFound(err) {
		log.Info("macvtap DEL: link gone, nothing to do")
		return nil
	}
	if err != nil {
		return &Error{Verb: verb, Step: "look up", Link: args.IfName, NetNS: args.Netns, Err: err}
	}
	if l.Type() != "macvtap" {
		return &Error{Verb: verb, Step: "delete", Link: args.IfName + " (" + l.Type() + ")", NetNS: args.Netns, Err: ErrNotMacvtap}
	}
	// ip link del CNI_IFNAME
	if err := cont.LinkDel(l); err != nil && !isNotFound(err) {
		return &Error{Verb: verb, Step: "delete", Link: args.IfName, NetNS: args.Netns, Err: err}
	}
	log.Info("macvtap DEL done")
	return nil
}

// Verify checks that the macvtap of args is configured as ADD left it.
func (p *Plugin) Verify(ctx context.Context, args *skel.CmdArgs) error {
	const verb = "CHECK"
	conf, err := cniconfig.Parse(args.StdinData)
	if err != nil {
		return err
	}
	mac, err := conf.EffectiveMAC(args.Args)
	if err != nil {
		return err
	}
	if conf.RawPrevResult == nil {
		return &Error{Verb: verb, Step: "read prevResult", Err: ErrNoPrevResult}
	}
	if err := cniversion.ParsePrevResult(&conf.NetConf); err != nil {
		return &Error{Verb: verb, Step: "parse prevResult", Err: fmt.Errorf("%w: %w", ErrBadPrevResult, err)}
	}
	prev, err := current.NewResultFromResult(conf.PrevResult)
	if err != nil {
		return &Error{Verb: verb, Step: "convert prevResult", Err: fmt.Errorf("%w: %w", ErrBadPrevResult, err)}
	}
	var iface *current.Interface
	for _, i := range prev.Interfaces {
		if i.Name == args.IfName && i.Sandbox == args.Netns {
			iface = i
			break
		}
	}
	if iface == nil {
		return &Error{Verb: verb, Step: "find interface in prevResult", Link: args.IfName, NetNS: args.Netns, Err: fmt.Errorf("%w: prevResult has no such sandbox interface", ErrMismatch)}
	}
	if mac == nil && iface.Mac != "" {
		if mac, err = net.ParseMAC(iface.Mac); err != nil {
			return &Error{Verb: verb, Step: "parse prevResult MAC", Link: args.IfName, Err: fmt.Errorf("%w: %w", ErrBadPrevResult, err)}
		}
	}

	target, cont, err := containerHandle(args.Netns)
	if err != nil {
		return &Error{Verb: verb, Step: "open container netns", NetNS: args.Netns, Err: err}
	}
	defer func() { _ = target.Close() }()
	defer cont.Close()
	l, err := cont.LinkByName(args.IfName)
	if err != nil {
		return &Error{Verb: verb, Step: "look up", Link: args.IfName, NetNS: args.Netns, Err: err}
	}
	a := l.Attrs()
	mismatch := func(what string, got, want any) error {
		return &Error{Verb: verb, Step: "compare " + what + " of", Link: args.IfName, NetNS: args.Netns,
			Err: fmt.Errorf("%w: got %v, want %v", ErrMismatch, got, want)}
	}
	switch {
	case l.Type() != "macvtap":
		return mismatch("type", l.Type(), "macvtap")
	case mac != nil && a.HardwareAddr.String() != mac.String():
		return mismatch("MAC", a.HardwareAddr, mac)
	case conf.MTU != 0 && a.MTU != conf.MTU:
		return mismatch("MTU", a.MTU, conf.MTU)
	case a.Flags&net.FlagUp == 0:
		return mismatch("state", "down", "up")
	case conf.PromiscMode && a.Promisc == 0:
		return mismatch("promiscuous mode", "off", "on")
	}
	if conf.IPAM.Type != "" {
		return p.ipamExec(ctx, "CHECK", conf, args)
	}
	return nil
}
