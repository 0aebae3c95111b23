package migration

import (
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
// queues: what the guest sees), except for the names of the target pod's
// links: the tap (target dev) and the bridge (source bridge) become the
// target's where they differ, as KubeVirt's pre-migration hook rewrites an
// ordinal tap name (tap1) to the hashed one (tap16477688c0e) of a target
// pod. The interfaces are matched by alias (ua-<name>).
//
// It refuses (naming the interface) a source interface the target domain
// lacks, and one whose MAC differs from the target's: the target's DHCP
// server would answer another MAC than the migrated vNIC's (KubeVirt's
// bug #16696; phase1's MigrationTarget option keeps the source's MAC).
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
	for i := range dom.Devices.Interfaces {
		src := &dom.Devices.Interfaces[i]
		name, ok := ifaceName(src.Alias)
		if !ok {
			continue
		}
		j := slices.IndexFunc(want, func(t libvirtxml.DomainInterface) bool { n, ok := ifaceName(t.Alias); return ok && n == name })
		if j < 0 {
			return nil, &TargetError{Interface: name, Why: "the target pod's domain has no such interface (did phase1 run there for it?)"}
		}
		if err := rename(name, src, &want[j]); err != nil {
			return nil, err
		}
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

// TargetError is a source interface the target cannot take as it is.
type TargetError struct {
	Interface string
	Why       string
}

func (e *TargetError) Error() string {
	return fmt.Sprintf("migration target: interface %q: %s", e.Interface, e.Why)
}

// rename gives src the target's link names; it refuses a MAC that differs.
func rename(name string, src, tgt *libvirtxml.DomainInterface) error {
	if src.MAC != nil && tgt.MAC != nil && !strings.EqualFold(src.MAC.Address, tgt.MAC.Address) {
		return &TargetError{Interface: name, Why: fmt.Sprintf("the source's MAC %s is not the target pod's %s: the target's DHCP server would not answer the migrated vNIC (give the target's phase1 the VMI's status.interfaces)",
			src.MAC.Address, tgt.MAC.Address)}
	}
	if src.Target != nil && src.Target.Dev != "" && tgt.Target != nil && tgt.Target.Dev != "" {
		src.Target.Dev = tgt.Target.Dev
	}
	if src.Source != nil && src.Source.Bridge != nil && tgt.Source != nil && tgt.Source.Bridge != nil {
		src.Source.Bridge.Bridge = tgt.Source.Bridge.Bridge
	}
	if src.Source != nil && src.Source.Ethernet != nil && tgt.Source != nil && tgt.Source.Bridge != nil {
		return &TargetError{Interface: name, Why: "the source attaches it as ethernet, the target pod's domain to a bridge: render both with the same interface type"}
	}
	return nil
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
			return &TargetError{Interface: name, Why: "not in the running domain"}
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
