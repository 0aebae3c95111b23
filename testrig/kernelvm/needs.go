//go:build linux

package kernelvm

import (
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// need describes one link type a test may ask for: the guest modules that
// provide it and how to probe for it in a throwaway namespace.
type need struct {
	modules []string
	probe   func(h *netlink.Handle) error
}

// needs maps the names accepted by [Delegate] to their modules and probes.
// It is never written to.
var needs = map[string]need{
	"dummy":  {modules: []string{"dummy"}, probe: probeAdd(func() netlink.Link { return &netlink.Dummy{LinkAttrs: attrs("kvmprobe0")} })},
	"bridge": {modules: []string{"bridge"}, probe: probeAdd(func() netlink.Link { return &netlink.Bridge{LinkAttrs: attrs("kvmprobe0")} })},
	"veth":   {modules: []string{"veth"}, probe: probeAdd(func() netlink.Link { return &netlink.Veth{LinkAttrs: attrs("kvmprobe0"), PeerName: "kvmprobe1"} })},
	"tun":    {modules: []string{"tun"}, probe: probeTap},
	"macvlan": {modules: []string{"macvlan"}, probe: probeChild(func(p int) netlink.Link {
		return &netlink.Macvlan{LinkAttrs: child(p), Mode: netlink.MACVLAN_MODE_BRIDGE}
	})},
	"macvtap": {modules: []string{"macvtap"}, probe: probeChild(func(p int) netlink.Link {
		return &netlink.Macvtap{Macvlan: netlink.Macvlan{LinkAttrs: child(p), Mode: netlink.MACVLAN_MODE_BRIDGE}}
	})},
	"vlan": {modules: []string{"8021q"}, probe: probeChild(func(p int) netlink.Link { return &netlink.Vlan{LinkAttrs: child(p), VlanId: 100} })},
}

func knownNeeds() string {
	names := make([]string, 0, len(needs))
	for n := range needs {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func attrs(name string) netlink.LinkAttrs {
	a := netlink.NewLinkAttrs()
	a.Name = name
	return a
}

func child(parent int) netlink.LinkAttrs {
	a := attrs("kvmprobe2")
	a.ParentIndex = parent
	return a
}

func probeAdd(mk func() netlink.Link) func(*netlink.Handle) error {
	return func(h *netlink.Handle) error { return h.LinkAdd(mk()) }
}

// probeTap creates a tap device; tun/tap devices are made through
// /dev/net/tun in the calling thread's namespace, which is the throwaway
// one (see [probe]).
func probeTap(h *netlink.Handle) error {
	return h.LinkAdd(&netlink.Tuntap{LinkAttrs: attrs("kvmprobe0"), Mode: netlink.TUNTAP_MODE_TAP})
}

// probeChild creates a parent link (a veth end, veth being built into most
// kernels, else a dummy) and the child link on top of it.
func probeChild(mk func(parent int) netlink.Link) func(*netlink.Handle) error {
	return func(h *netlink.Handle) error {
		err := h.LinkAdd(&netlink.Veth{LinkAttrs: attrs("kvmprobe0"), PeerName: "kvmprobe1"})
		if err != nil {
			if err2 := h.LinkAdd(&netlink.Dummy{LinkAttrs: attrs("kvmprobe0")}); err2 != nil {
				return fmt.Errorf("parent link: veth: %w; dummy: %w", err, err2)
			}
		}
		parent, err := h.LinkByName("kvmprobe0")
		if err != nil {
			return fmt.Errorf("parent link kvmprobe0: %w", err)
		}
		return h.LinkAdd(mk(parent.Attrs().Index))
	}
}

// modulesFor returns the guest modules for the needs plus extra, in the
// order given, without duplicates.
func modulesFor(names, extra []string) ([]string, error) {
	var mods []string
	for _, n := range names {
		nd, ok := needs[n]
		if !ok {
			return nil, &NeedError{Need: n}
		}
		mods = append(mods, nd.modules...)
	}
	mods = append(mods, extra...)
	seen := map[string]bool{}
	out := mods[:0]
	for _, m := range mods {
		m = strings.ReplaceAll(m, "-", "_")
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out, nil
}

// ProbeError says which need the running kernel does not support.
type ProbeError struct {
	// Need is the need whose probe failed.
	Need string
	// Err is the netlink error.
	Err error
}

func (e *ProbeError) Error() string {
	return fmt.Sprintf("kernelvm: this kernel cannot create a %s link: %v", e.Need, e.Err)
}

// Unwrap returns the netlink error.
func (e *ProbeError) Unwrap() error { return e.Err }

// Supported reports whether the running kernel can create every link type
// in names. It probes in a new network namespace on a locked OS thread that
// is thrown away afterwards, so the caller's namespaces are not touched. It
// needs CAP_SYS_ADMIN and CAP_NET_ADMIN. The result is nil when all are
// supported, a [*ProbeError] for the first one that is not, a [*NeedError]
// for an unknown name, or another error when the probe could not be made.
func Supported(names ...string) error {
	for _, n := range names {
		if _, ok := needs[n]; !ok {
			return &NeedError{Need: n}
		}
	}
	for _, n := range names {
		if err := probe(n); err != nil {
			return err
		}
	}
	return nil
}

// probe runs one need's probe in a fresh namespace (a fresh one per need,
// so that names never clash).
func probe(name string) error {
	errc := make(chan error, 1)
	go func() {
		// The thread is never unlocked: when this goroutine returns, the
		// runtime ends the thread and with it its (new) network namespace,
		// so the thread cannot go back into the pool in the wrong one.
		runtime.LockOSThread()
		ns, err := netns.New()
		if err != nil {
			errc <- fmt.Errorf("kernelvm: probing %s: new network namespace: %w", name, err)
			return
		}
		defer func() { _ = ns.Close() }()
		// This thread is in the new namespace: the handle's socket is
		// made there.
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			errc <- fmt.Errorf("kernelvm: probing %s: netlink handle: %w", name, err)
			return
		}
		defer h.Close()
		if err := needs[name].probe(h); err != nil {
			errc <- &ProbeError{Need: name, Err: err}
			return
		}
		errc <- nil
	}()
	return <-errc
}

// isProbeError reports whether err says a need is unsupported (as opposed
// to a probe that could not run).
func isProbeError(err error) bool {
	var pe *ProbeError
	return errors.As(err, &pe)
}
