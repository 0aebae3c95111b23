package migration

import (
	"fmt"
	"slices"

	"github.com/virtnet/virtnet/api"
)

// AllowPodBridgeAnnotation is the VMI annotation that lets a VMI whose pod
// network uses the bridge binding migrate (KubeVirt v1.9.0's
// kubevirt.io/allow-pod-bridge-network-live-migration); its presence
// counts, whatever its value ("false" included, as in KubeVirt).
const AllowPodBridgeAnnotation = "kubevirt.io/allow-pod-bridge-network-live-migration"

// ConditionReason is the reason of the VMI's LiveMigratable condition
// (status False) that KubeVirt v1.9.0 sets when the network blocks the
// migration; the message is the [*NotMigratableError]'s text.
const ConditionReason = "InterfaceNotLiveMigratable"

// MethodLinkRefresh is the migration method of a KubeVirt binding plugin
// (spec.configuration.network.binding.<name>.migration.method) that asks
// for a link refresh after the switch-over.
const MethodLinkRefresh = "link-refresh"

// Plugin is what the KubeVirt CR says of a binding plugin
// (spec.configuration.network.binding.<name>) that matters to a
// migration.
type Plugin struct {
	// Migration is the plugin's migration stanza; nil when it has none,
	// and then a VMI whose pod network uses the plugin cannot migrate.
	Migration *PluginMigration `json:"migration,omitempty"`
}

// PluginMigration is a binding plugin's migration stanza.
type PluginMigration struct {
	// Method is "" (migrate, nothing more) or [MethodLinkRefresh].
	Method string `json:"method,omitempty"`
}

// Action is what an interface needs around a migration.
type Action string

// The actions.
const (
	// ActionNone: the interface migrates with the VM and nothing more is
	// done (masquerade, passt: the guest keeps its address, gateway and
	// gateway MAC, which do not depend on the pod).
	ActionNone Action = "none"
	// ActionLinkRefresh: after the switch-over the target sets the
	// interface's link down, waits [RefreshPause] and sets it up, so that
	// the guest asks DHCP again (its address came from the source pod).
	ActionLinkRefresh Action = "link-refresh"
	// ActionDetachReattach: the device cannot travel (an SR-IOV VF is a
	// host device): it is detached from the source before the migration
	// and the target's own device attached after it.
	ActionDetachReattach Action = "detach-reattach"
)

// Interface is one interface of a [Plan].
type Interface struct {
	// Name is the interface's (and its network's) name.
	Name string
	// Binding is its binding method or plugin name.
	Binding string
	// Primary is set for the pod network (or a Multus default network).
	Primary bool
	// Action is what it needs around the migration.
	Action Action
}

// Plan is what a migratable VMI's interfaces need, in spec.networks
// order; absent interfaces (hot-unplugged) are not in it.
type Plan struct {
	Interfaces []Interface
}

// Refresh lists the interfaces whose action is [ActionLinkRefresh].
func (p *Plan) Refresh() []string {
	var out []string
	for _, i := range p.Interfaces {
		if i.Action == ActionLinkRefresh {
			out = append(out, i.Name)
		}
	}
	return out
}

// NotMigratableError says which interface keeps a VMI from migrating, and
// why. Its message is KubeVirt v1.9.0's condition message, followed by
// the interface and the reason.
type NotMigratableError struct {
	// Interface is the pod network's interface name.
	Interface string
	// Binding is its binding method or plugin name.
	Binding string
	// Field is the field path a user changes to make the VMI migratable
	// (the interface, or the annotation).
	Field string
	// Why is the reason in words.
	Why string
}

func (e *NotMigratableError) Error() string {
	return fmt.Sprintf("cannot migrate VMI which does not use masquerade or a migratable plugin to connect to the pod network: interface %q (%s, %s): %s",
		e.Interface, e.Binding, e.Field, e.Why)
}

// Check says whether the network of a validated VMI lets it live-migrate,
// as KubeVirt v1.9.0 decides it (pkg/network/vmispec VerifyVMIMigratable;
// TestCheckKubeVirt holds the answers its own function gave), and what each
// interface needs if so. plugins is the KubeVirt CR's binding plugins by
// name (nil when there are none).
//
// Only the pod network's interface can block: masquerade and passtBinding
// migrate; the bridge binding only with [AllowPodBridgeAnnotation]; a
// binding plugin only when plugins gives it a migration stanza; anything
// else (the deprecated passt, slirp) does not. A VMI without a pod network
// (secondary networks only, a Multus default network included) migrates
// whatever its bindings, as in KubeVirt. A block is a
// [*NotMigratableError].
//
// The actions: SR-IOV is detached and re-attached; a binding plugin with
// migration method link-refresh gets a link refresh, as in KubeVirt; the
// bridge binding gets one too (a virtnet addition: its guest's address is
// the source pod's, and the target pod has another; [TargetDomain] drops
// it for an interface whose target record has no IPAM, whose guest has no
// lease to renew); everything else none.
func Check(vmi *api.VMI, plugins map[string]Plugin) (*Plan, error) {
	pairs, err := api.Pairs(vmi)
	if err != nil {
		return nil, err
	}
	if err := checkPodNetwork(vmi, pairs, plugins); err != nil {
		return nil, err
	}
	present, _ := api.Present(pairs)
	plan := &Plan{}
	for _, p := range present {
		plan.Interfaces = append(plan.Interfaces, Interface{
			Name:    p.Interface.Name,
			Binding: p.Binding(),
			Primary: p.Primary(),
			Action:  actionOf(p.Interface, plugins),
		})
	}
	return plan, nil
}

// actionOf is what an interface needs around a migration.
func actionOf(iface *api.Interface, plugins map[string]Plugin) Action {
	switch {
	case iface.SRIOV != nil:
		return ActionDetachReattach
	case iface.Bridge != nil:
		return ActionLinkRefresh
	case iface.Plugin != nil:
		if m := plugins[iface.Plugin.Name].Migration; m != nil && m.Method == MethodLinkRefresh {
			return ActionLinkRefresh
		}
	}
	return ActionNone
}

// checkPodNetwork is KubeVirt v1.9.0's decision: only the interface of the
// pod network (the first network with pod: {}) counts.
func checkPodNetwork(vmi *api.VMI, pairs []api.Pair, plugins map[string]Plugin) error {
	i := slices.IndexFunc(pairs, func(p api.Pair) bool { return p.Network.Pod != nil })
	if i < 0 {
		return nil
	}
	iface := pairs[i].Interface
	field := fmt.Sprintf("spec.domain.devices.interfaces[%d]", pairs[i].Index)
	block := func(why string) error {
		return &NotMigratableError{Interface: iface.Name, Binding: iface.Binding(), Field: field, Why: why}
	}
	switch {
	case iface.Masquerade != nil || iface.PasstBinding != nil:
		return nil
	case iface.Bridge != nil:
		if _, ok := vmi.Metadata.Annotations[AllowPodBridgeAnnotation]; ok {
			return nil
		}
		field = "metadata.annotations"
		return block("the bridge binding on the pod network migrates only with the annotation " + AllowPodBridgeAnnotation +
			" (the guest keeps the source pod's address)")
	case iface.Plugin != nil:
		p, ok := plugins[iface.Plugin.Name]
		switch {
		case !ok:
			return block(fmt.Sprintf("binding plugin %q is not in the KubeVirt CR", iface.Plugin.Name))
		case p.Migration == nil:
			return block(fmt.Sprintf("binding plugin %q has no migration stanza in the KubeVirt CR", iface.Plugin.Name))
		}
		return nil
	}
	return block(fmt.Sprintf("the %s binding does not migrate", iface.Binding()))
}
