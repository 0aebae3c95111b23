package migration

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/domxml"
)

// Target is what a migration target's launcher uses: the domain to
// migrate into, and what to do after the switch-over.
type Target struct {
	// Domain is the source's migratable domain with the target pod's
	// link names (libvirt's destination XML: virsh migrate --xml, or
	// VIR_MIGRATE_PARAM_DEST_XML).
	Domain *libvirtxml.Domain
	// Refresh names the interfaces whose link [RefreshLinks] refreshes
	// after the switch-over.
	Refresh []string
	// Attach are the target pod's own host devices (SR-IOV VFs) to attach
	// after the switch-over; the source's were dropped from Domain.
	Attach []libvirtxml.DomainHostdev
}

// TargetDomain builds the target's domain from the source's migratable
// domain (virsh dumpxml --migratable, or what libvirt's migration hands
// the destination) and the domain phase2 built for the same VMI in the
// target pod (prestart.Running.Domain after phase1 ran there). The
// interfaces stay as the source defined them (model, MAC, PCI address,
// queues: what the guest sees), except for their attachment to the target
// pod's links: an interface on phase1's bridge and tap takes the target
// domain's type, source and target whole (the tap, target dev, and the
// bridge, source bridge, become the target's, as KubeVirt's pre-migration
// hook rewrites an ordinal tap name, tap1, to the hashed one,
// tap16477688c0e, of a target pod; a source rendered as type bridge and a
// target as type ethernet, or the other way round, converge to the
// target's); other attachments keep their type and take the target's link
// names. The interfaces are matched by alias (ua-<name>).
//
// It refuses, naming the interface ([ErrTarget]): a source interface
// whose alias is not ua-<name> of a present VMI interface, two source
// interfaces of one alias, a source or target interface without <mac>,
// one the target domain lacks or has twice, one whose MAC differs from
// the target's (the target's DHCP server would answer another MAC than the
// migrated vNIC's: KubeVirt's bug #16696; phase1's MigrationTarget option
// keeps the source's MAC), another attachment type on each side (but
// bridge and ethernet), and two interfaces left on one tap or macvtap.
// SR-IOV host devices (alias ua-sriov-<name>) are dropped from the domain
// and the target's own returned in Attach ([ActionDetachReattach]).
//
// It checks the VMI first ([Check] with plugins, the KubeVirt CR's
// binding plugins): a VMI that cannot migrate is a [*NotMigratableError].
// Refresh is the plan's [Plan.Refresh], less the bridge interfaces whose
// record in store (the target pod's, nil store: none read) has no IPAM:
// their guest got no address from the pod and has no lease to renew.
// Interfaces whose spec state is down are never refreshed.
func TargetDomain(vmi *api.VMI, plugins map[string]Plugin, source, target *libvirtxml.Domain, store *cache.Store) (*Target, error) {
	if vmi == nil || source == nil || target == nil {
		return nil, errors.New("migration: TargetDomain needs the VMI, the source's domain and the target's")
	}
	plan, err := Check(vmi, plugins)
	if err != nil {
		return nil, err
	}
	dom, err := copyDomain(source)
	if err != nil {
		return nil, err
	}
	out := &Target{Domain: dom}
	if dom.Devices == nil {
		return out, nil
	}
	var want []libvirtxml.DomainInterface
	if target.Devices != nil {
		want = target.Devices.Interfaces
	}
	present := map[string]bool{}
	for _, i := range plan.Interfaces {
		present[i.Name] = true
	}
	seen := map[string]bool{}
	for i := range dom.Devices.Interfaces {
		src := &dom.Devices.Interfaces[i]
		name, err := sourceName(i, src, present, seen)
		if err != nil {
			return nil, err
		}
		tgt, err := targetOf(name, want)
		if err != nil {
			return nil, err
		}
		if err := rename(name, src, tgt); err != nil {
			return nil, err
		}
	}
	if err := oneDevicePerLink(dom.Devices.Interfaces); err != nil {
		return nil, err
	}
	// SR-IOV: the source's VFs do not travel; the target's are attached
	// after the switch-over.
	dom.Devices.Hostdevs = slices.DeleteFunc(dom.Devices.Hostdevs, func(h libvirtxml.DomainHostdev) bool {
		return h.Alias != nil && strings.HasPrefix(h.Alias.Name, sriovAliasPrefix)
	})
	if target.Devices != nil {
		for _, h := range target.Devices.Hostdevs {
			if h.Alias != nil && strings.HasPrefix(h.Alias.Name, sriovAliasPrefix) {
				out.Attach = append(out.Attach, h)
			}
		}
	}
	for _, name := range plan.Refresh() {
		keep, err := needsRefresh(vmi, plan, name, store)
		if err != nil {
			return nil, err
		}
		if keep {
			out.Refresh = append(out.Refresh, name)
		}
	}
	return out, nil
}

// sriovAliasPrefix starts the alias of an SR-IOV VF's <hostdev>.
const sriovAliasPrefix = "ua-sriov-"

// ErrTarget is matched by the error of a source interface the target
// cannot take as it is; the message names the interface and why.
var ErrTarget = errors.New("migration target")

func targetError(iface, why string) error {
	return fmt.Errorf("%w: interface %q: %s", ErrTarget, iface, why)
}

// sourceName is the VMI interface the source domain's i-th interface is:
// it must have a ua-<name> alias naming a present interface of the VMI,
// no other source interface the same alias, and a MAC (the guard against
// another MAC on the target compares it). seen collects the names.
func sourceName(i int, src *libvirtxml.DomainInterface, present, seen map[string]bool) (string, error) {
	name, ok := ifaceName(src.Alias)
	if !ok {
		alias := "none"
		if src.Alias != nil {
			alias = fmt.Sprintf("%q", src.Alias.Name)
		}
		return "", targetError(fmt.Sprintf("source domain's interface %d", i),
			fmt.Sprintf("its alias (%s) is not ua-<name> of an interface of the VMI: refusing to guess which pod link it is", alias))
	}
	switch {
	case !present[name]:
		return "", targetError(name, "the source domain has an interface of alias ua-"+name+" and the VMI no such interface present")
	case seen[name]:
		return "", targetError(name, "the source domain has two interfaces of alias ua-"+name+": both would take its one tap")
	case src.MAC == nil || src.MAC.Address == "":
		return "", targetError(name, "the source domain's interface has no <mac>: the MAC the guest uses cannot be checked against the target pod's")
	}
	seen[name] = true
	return name, nil
}

// targetOf is the one interface of the target pod's domain with the
// alias of name.
func targetOf(name string, want []libvirtxml.DomainInterface) (*libvirtxml.DomainInterface, error) {
	var found *libvirtxml.DomainInterface
	for j := range want {
		if n, ok := ifaceName(want[j].Alias); !ok || n != name {
			continue
		}
		if found != nil {
			return nil, targetError(name, "the target pod's domain has two interfaces of alias ua-"+name)
		}
		found = &want[j]
	}
	switch {
	case found == nil:
		return nil, targetError(name, "the target pod's domain has no such interface (did phase1 run there for it?)")
	case found.MAC == nil || found.MAC.Address == "":
		return nil, targetError(name, "the target pod's domain gives it no <mac>")
	}
	return found, nil
}

// oneDevicePerLink refuses two interfaces of the destination domain on
// one tap (target dev) or one macvtap (source dev).
func oneDevicePerLink(ifaces []libvirtxml.DomainInterface) error {
	used := map[string]string{}
	for _, i := range ifaces {
		name, _ := ifaceName(i.Alias)
		var links []string
		if i.Target != nil && i.Target.Dev != "" {
			links = append(links, i.Target.Dev)
		}
		if i.Source != nil && i.Source.Direct != nil && i.Source.Direct.Dev != "" {
			links = append(links, i.Source.Direct.Dev)
		}
		for _, l := range links {
			if other, ok := used[l]; ok && other != name {
				return targetError(name, fmt.Sprintf("it would share link %s with interface %q", l, other))
			}
			used[l] = name
		}
	}
	return nil
}

// tapAttachment reports an attachment on phase1's bridge and tap: the
// two interface types of the bridge and masquerade bindings.
func tapAttachment(kind string) bool { return kind == "bridge" || kind == "ethernet" }

// rename gives src the target pod's attachment; it refuses a MAC that
// differs. An interface on phase1's bridge and tap (type bridge or
// ethernet, on either side) takes the target's type, source and target
// whole: a source launcher with CAP_NET_ADMIN renders type bridge, a
// target without it type ethernet, and the other way round, and the
// destination must use the target pod's links whatever the source's were.
// Other attachments keep their type and take the target's link names; a
// change of type between them is refused.
func rename(name string, src, tgt *libvirtxml.DomainInterface) error {
	if !strings.EqualFold(src.MAC.Address, tgt.MAC.Address) {
		return targetError(name, fmt.Sprintf("the source's MAC %s is not the target pod's %s: the target's DHCP server would not answer the migrated vNIC (give the target's phase1 the VMI's status.interfaces)",
			src.MAC.Address, tgt.MAC.Address))
	}
	sk, tk := domxml.InterfaceType(src), domxml.InterfaceType(tgt)
	if tapAttachment(sk) && tapAttachment(tk) {
		c, err := copyInterface(tgt)
		if err != nil {
			return err
		}
		src.Source, src.Target = c.Source, c.Target
		return nil
	}
	if sk != tk {
		return targetError(name, fmt.Sprintf("the source attaches it as %s, the target pod's domain as %s: no way to carry one to the other", cmp.Or(sk, "nothing"), cmp.Or(tk, "nothing")))
	}
	if src.Target != nil && src.Target.Dev != "" && tgt.Target != nil && tgt.Target.Dev != "" {
		src.Target.Dev = tgt.Target.Dev
	}
	if src.Source != nil && src.Source.Direct != nil && tgt.Source != nil && tgt.Source.Direct != nil {
		src.Source.Direct.Dev = tgt.Source.Direct.Dev
	}
	return nil
}

// copyInterface is a deep copy of an interface.
func copyInterface(i *libvirtxml.DomainInterface) (*libvirtxml.DomainInterface, error) {
	s, err := i.Marshal()
	if err != nil {
		return nil, fmt.Errorf("migration: interface: %w", err)
	}
	out := &libvirtxml.DomainInterface{}
	if err := out.Unmarshal(s); err != nil {
		return nil, fmt.Errorf("migration: interface: %w", err)
	}
	return out, nil
}

// needsRefresh drops what cannot or need not be refreshed.
func needsRefresh(vmi *api.VMI, plan *Plan, name string, store *cache.Store) (bool, error) {
	for _, iface := range vmi.Spec.Domain.Devices.Interfaces {
		if iface.Name == name && iface.LinkDown() {
			return false, nil
		}
	}
	i := slices.IndexFunc(plan.Interfaces, func(i Interface) bool { return i.Name == name })
	if i < 0 || plan.Interfaces[i].Binding != api.BindingBridge || store == nil {
		return true, nil
	}
	rec, err := store.ReadInterface(vmi.Metadata.UID, name)
	if err != nil {
		return false, fmt.Errorf("migration target: interface %q: %w", name, err)
	}
	return !rec.IPAMDisabled, nil
}

// ifaceName is the interface name of a ua-<name> alias.
func ifaceName(a *libvirtxml.DomainAlias) (string, bool) {
	if a == nil {
		return "", false
	}
	return strings.CutPrefix(a.Name, domxml.Alias("").Name)
}

func copyDomain(d *libvirtxml.Domain) (*libvirtxml.Domain, error) {
	s, err := d.Marshal()
	if err != nil {
		return nil, fmt.Errorf("migration: domain: %w", err)
	}
	out := &libvirtxml.Domain{}
	if err := out.Unmarshal(s); err != nil {
		return nil, fmt.Errorf("migration: domain: %w", err)
	}
	return out, nil
}

// RefreshPause is how long [RefreshLinks] leaves a link down: KubeVirt's
// pause, since some guests ignore a down and up that come at once.
const RefreshPause = 100 * time.Millisecond

// DeviceUpdater changes a device of a running domain (libvirt's
// virDomainUpdateDeviceFlags with VIR_DOMAIN_AFFECT_LIVE, or virsh
// update-device --live).
type DeviceUpdater interface {
	UpdateDevice(ctx context.Context, deviceXML string) error
}

// RefreshLinks sets the link of each interface named in names down, waits
// [RefreshPause], and sets it back to what dom says (up unless dom has it
// down), so that the guest asks DHCP again. dom is the running domain (on
// the target, after the switch-over); interfaces are found by alias.
func RefreshLinks(ctx context.Context, u DeviceUpdater, dom *libvirtxml.Domain, names []string) error {
	if len(names) == 0 {
		return nil
	}
	if dom == nil || dom.Devices == nil {
		return errors.New("migration: RefreshLinks needs the running domain")
	}
	for _, name := range names {
		i := slices.IndexFunc(dom.Devices.Interfaces, func(d libvirtxml.DomainInterface) bool { n, ok := ifaceName(d.Alias); return ok && n == name })
		if i < 0 {
			return targetError(name, "not in the running domain")
		}
		up := dom.Devices.Interfaces[i]
		if up.Link == nil {
			up.Link = &libvirtxml.DomainInterfaceLink{State: "up"}
		}
		down := up
		down.Link = &libvirtxml.DomainInterfaceLink{State: "down"}
		for _, step := range []struct {
			what  string
			iface *libvirtxml.DomainInterface
			pause time.Duration
		}{{"down", &down, RefreshPause}, {"up", &up, 0}} {
			x, err := step.iface.Marshal()
			if err != nil {
				return fmt.Errorf("migration: interface %q: %w", name, err)
			}
			if err := u.UpdateDevice(ctx, x); err != nil {
				return fmt.Errorf("migration: interface %q: link %s: %w", name, step.what, err)
			}
			if step.pause > 0 {
				t := time.NewTimer(step.pause)
				select {
				case <-ctx.Done():
					t.Stop()
					// Leave the link as dom has it, whatever the context.
					if x, err := up.Marshal(); err == nil {
						_ = u.UpdateDevice(context.WithoutCancel(ctx), x)
					}
					return ctx.Err()
				case <-t.C:
				}
			}
		}
	}
	return nil
}
