package binding

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/domxml"
	"github.com/virtnet/virtnet/netdriver"
)

// Input is what a binding gets about one interface/network pair.
type Input struct {
	VMI  *api.VMI
	Pair api.Pair
	// Names are the kernel names derived for this pair.
	Names Names
	// TapOwner is the uid and gid that own the taps phase1 creates: the
	// user QEMU runs as (0 for a root VMI, 107, "qemu", for a non-root
	// one; see phase1.TapOwnerFor).
	TapOwner int
	// Logger is never nil.
	Logger *slog.Logger
	// Resumed is set when the pair's records existed before this run (or
	// for Cleanup): a previous run may have been killed between creating
	// a link and marking it (see [Mark]), so an unmarked link as just
	// created may be taken for phase1's.
	Resumed bool
}

// Names are the link names a binding may use for one pair; see package
// internal/names for how they are derived.
type Names struct {
	// Pod is the pod link (eth0, net1).
	Pod string
	// NIC is the pod link after the bridge binding renamed it (eth0-nic).
	NIC string
	// Bridge is the in-pod bridge (k6t-eth0).
	Bridge string
	// Tap is the VM's tap (tap0).
	Tap string
}

// Phase1 is the privileged half of a binding. phase1.Run calls, per pair:
// Discover (only when the pair was never discovered: a re-run resumes from
// the discovery recorded in the cache, since Prepare changes what Discover
// would see), Plan, then Prepare. Every method must be safe to call again
// after a failure at any point of a previous call.
type Phase1 interface {
	// Discover reads the pod link as the CNI left it. It changes nothing.
	// A binding with nothing to discover returns nil, nil.
	Discover(ctx context.Context, d netdriver.Driver, in Input) (*cache.Link, error)
	// Plan computes the interface record from the discovery (nil when
	// Discover returned nil). It touches neither the kernel nor files.
	Plan(in Input, link *cache.Link) (*cache.Interface, error)
	// Prepare makes the namespace match the record. It is idempotent.
	Prepare(ctx context.Context, d netdriver.Driver, in Input, link *cache.Link, rec *cache.Interface) error
	// Cleanup returns the namespace to how the CNI left it (link as
	// discovered). Missing pieces are not errors.
	Cleanup(ctx context.Context, d netdriver.Driver, in Input, link *cache.Link, rec *cache.Interface) error
}

// InterfaceType selects how bridge-like bindings attach the VM.
type InterfaceType string

// The interface types. Bridge is the default.
const (
	// InterfaceBridge renders <interface type='bridge'> with
	// <source bridge='k6t-…'/>: libvirt creates and enslaves the tap, which
	// needs a privileged libvirt (CAP_NET_ADMIN in the pod).
	InterfaceBridge InterfaceType = "bridge"
	// InterfaceEthernet renders <interface type='ethernet'> with
	// <target dev='tap0' managed='no'/>: libvirt opens the tap phase1
	// made, which an unprivileged libvirt can do (KubeVirt v0.53's form).
	InterfaceEthernet InterfaceType = "ethernet"
)

// RenderOptions are per-call choices of phase2.
type RenderOptions struct {
	// InterfaceType for bridge and masquerade; "" means InterfaceBridge.
	InterfaceType InterfaceType
	// Env is the launcher's environment (SR-IOV device plugin variables
	// PCIDEVICE_* and KUBEVIRT_RESOURCE_NAME_*); nil means none.
	Env map[string]string
	// NetworkInfo is the content of KubeVirt 1.x's downward-API file
	// /etc/podinfo/network-info (the pod annotation
	// kubevirt.io/network-info: each network's device-info, the SR-IOV
	// VF's PCI address among them); nil means none was read.
	// prestart.Hook fills it when the VMI has an SR-IOV interface.
	NetworkInfo []byte
	// ResolvConf is the content of the pod's resolv.conf, whose search
	// domains slirp offers the guest (dnssearch=); nil means none was
	// read, which gives KubeVirt's default search domain (cluster.local).
	// prestart.Hook fills it from the pod's file.
	ResolvConf []byte
}

// RenderInput is what phase2 gets about one pair.
type RenderInput struct {
	VMI  *api.VMI
	Pair api.Pair
	// Record is the pair's interface record from phase1, or nil for
	// bindings whose Phase1 writes none.
	Record  *cache.Interface
	Options RenderOptions
}

// Phase2 is the unprivileged half of a binding: it adds the pair's device
// to the domain. It never touches the kernel.
type Phase2 interface {
	Render(in RenderInput, dom *libvirtxml.Domain) error
}

// Binding is one binding method with both halves.
type Binding interface {
	// Method is the key the binding is registered under: a VMI binding
	// method ("bridge", "masquerade", …) or, for a binding from outside,
	// the plugin name a VMI interface gives in binding: {name: …}.
	Method() string
	// NeedsRecord reports whether Render needs phase1's interface record.
	NeedsRecord() bool
	Phase1
	Phase2
}

// DHCPServer is an optional interface of a [Binding] whose guest gets its
// addresses from a DHCP server the launcher runs on the pod side of the
// interface (bridge, masquerade). prestart.Hook's network step (and the
// KubeVirt 1.x sidecar) starts one for every interface whose binding
// implements DHCPServer and asks for a service; the server's configuration
// comes from the record (phase2/dhcp.NewConfigFor: addresses, gateway,
// routes, MTU, the bridge to serve on) and the VMI (DHCP options,
// hostname), and a record without IPAM gets no server. A binding that does
// not implement it gets no DHCP server (prestart.TestBindingAsksForDHCP).
//
// It answers with what to serve rather than a server configuration: that
// is the record's and the VMI's in every case, and returning a dhcp.Config
// would make this package, which every binding imports, import the DHCP
// server.
type DHCPServer interface {
	// DHCPService says what the launcher serves the guest of the
	// interface of rec (nil when the binding's NeedsRecord is false); the
	// zero value serves nothing.
	DHCPService(rec *cache.Interface) DHCPService
}

// DHCPService is what a launcher's DHCP server offers one guest.
type DHCPService struct {
	// IPv4 serves DHCPv4: the record's IPv4 address, gateway, routes and
	// MTU, the pod's DNS.
	IPv4 bool
	// IPv6 serves DHCPv6 and router advertisements with the record's IPv6
	// address (alone when the record has no IPv4 address).
	IPv6 bool
	// RequireMAC makes the record's MAC required: the server answers only
	// the VM. Without it, a record without a MAC is served to whoever
	// asks on the bridge (masquerade's bridge has the VM alone on it).
	RequireMAC bool
}

// Serves reports whether s serves anything.
func (s DHCPService) Serves() bool { return s.IPv4 || s.IPv6 }

// DeviceAliaser is an optional interface of a [Binding] whose device's
// alias is not "ua-<interface name>" (SR-IOV's <hostdev>:
// "ua-sriov-<name>").
type DeviceAliaser interface {
	// DeviceAlias is the alias Render gives the device of the interface
	// named iface.
	DeviceAlias(iface string) string
}

// DeviceAlias is the alias of the device b renders for the interface named
// iface: b's own when it implements [DeviceAliaser], else "ua-<iface>"
// (domxml.Alias). A launcher finds an interface's device in a domain by
// it.
func DeviceAlias(b Binding, iface string) string {
	if a, ok := b.(DeviceAliaser); ok {
		return a.DeviceAlias(iface)
	}
	return domxml.Alias(iface).Name
}

// Registry maps a binding method, or a binding plugin's name, to its
// implementation (api.Interface.Binding is the key).
type Registry map[string]Binding

// Lookup returns the binding of a method or an error matching
// [ErrUnknownMethod]; a method registered with a nil binding is refused
// the same way (its error says so), never returned.
func (r Registry) Lookup(method string) (Binding, error) {
	b, ok := r[method]
	if !ok || b == nil {
		return nil, unknownMethod(method, ok)
	}
	return b, nil
}

// Check refuses a VMI with an interface whose binding method or plugin
// name (binding: {name: …}) has no implementation in r: an [errors.Join]
// of [*api.FieldError] (see [api.FieldErrors]), one per interface, each
// naming the field (spec.domain.devices.interfaces[i].binding.name, or
// the method's key) and listing the names r knows. phase1.Run calls it
// with its registry before it changes anything; a launcher calls it after
// [api.Load] to refuse a misspelt plugin name at once. An interface with
// no binding, or more than one, is left to [api.Validate]. Each error
// wraps [ErrUnknownMethod].
func (r Registry) Check(vmi *api.VMI) error {
	var errs []error
	for i := range vmi.Spec.Domain.Devices.Interfaces {
		iface := &vmi.Spec.Domain.Devices.Interfaces[i]
		name := iface.Binding()
		if name == "" {
			continue
		}
		b, ok := r[name]
		if ok && b != nil {
			continue
		}
		path := fmt.Sprintf("spec.domain.devices.interfaces[%d]", i)
		switch {
		case iface.Plugin != nil:
			path += ".binding.name"
		case iface.PasstBinding != nil:
			path += ".passtBinding"
		default:
			path += "." + name
		}
		known := "none"
		if names := r.Names(); len(names) > 0 {
			known = strings.Join(names, ", ")
		}
		err := unknownMethod(name, ok)
		errs = append(errs, &api.FieldError{Path: path, Value: name, Reason: err.Error() + "; known: " + known, Err: err})
	}
	return errors.Join(errs...)
}

// Names returns the names r has a binding for, sorted.
func (r Registry) Names() []string {
	var names []string
	for name, b := range r {
		if b != nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// ErrUnknownMethod is matched by the error of a binding method or plugin
// name that a [Registry] has no binding for, or maps to nil; the error
// names the method and says which of the two.
var ErrUnknownMethod = errors.New("binding: no implementation")

func unknownMethod(method string, registered bool) error {
	if registered {
		return fmt.Errorf("%w: method %s is registered with a nil implementation", ErrUnknownMethod, method)
	}
	return fmt.Errorf("%w of method %s", ErrUnknownMethod, method)
}

// NoKernelWork is the phase1 half of a binding that neither discovers nor
// changes anything in the pod (slirp, SR-IOV; passt overrides Prepare):
// its record only names the interface and its binding, so that phase1
// still tracks its progress. Embed it in the binding's type.
type NoKernelWork struct{}

// NeedsRecord is false: Render works from the VMI (and the environment).
func (NoKernelWork) NeedsRecord() bool { return false }

// Discover does nothing.
func (NoKernelWork) Discover(ctx context.Context, d netdriver.Driver, in Input) (*cache.Link, error) {
	return nil, nil
}

// Plan returns a record naming only the interface and its binding.
func (NoKernelWork) Plan(in Input, link *cache.Link) (*cache.Interface, error) {
	return &cache.Interface{
		Version:      cache.Version,
		Interface:    in.Pair.Interface.Name,
		PodInterface: in.Pair.PodInterface,
		Binding:      in.Pair.Binding(),
	}, nil
}

// Prepare does nothing.
func (NoKernelWork) Prepare(ctx context.Context, d netdriver.Driver, in Input, link *cache.Link, rec *cache.Interface) error {
	return nil
}

// Cleanup does nothing.
func (NoKernelWork) Cleanup(ctx context.Context, d netdriver.Driver, in Input, link *cache.Link, rec *cache.Interface) error {
	return nil
}
