package phase2

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/binding/registry"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/domxml"
)

// Item is one interface ready to render: its pair, its binding and, when
// the binding needs one, phase1's record.
type Item struct {
	Pair    api.Pair
	Binding binding.Binding
	// Record is nil for bindings whose NeedsRecord is false.
	Record *cache.Interface
}

// Records is where the launcher's side finds the record of an interface:
// phase1's cache ([CacheRecords], virtnet's own launcher) or the hand-off
// the KubeVirt 1.x binding CNI plugin leaves on the interface's tap (the
// binding sidecar's). It is asked only for pairs whose binding needs a
// record (binding.Binding.NeedsRecord) and returns the record checked to
// belong to the pair, or an error naming the interface.
type Records interface {
	// Record returns the record of pair p of vmi.
	Record(ctx context.Context, vmi *api.VMI, p api.Pair) (*cache.Interface, error)
}

// CacheRecords reads the records phase1 wrote in Store: a missing record
// is a [*MissingCacheError], one of another binding, pod interface or
// version matches [ErrStaleCache], a bad value [ErrInvalidRecord], and
// one whose progress record does not say finished a [*NotReadyError].
type CacheRecords struct {
	Store *cache.Store
}

// Record reads and checks the pair's record and its progress record.
func (c CacheRecords) Record(_ context.Context, vmi *api.VMI, p api.Pair) (*cache.Interface, error) {
	uid, name := vmi.Metadata.UID, p.Interface.Name
	path, err := c.Store.InterfacePath(uid, name)
	if err != nil {
		return nil, fmt.Errorf("phase2: interface %q: %w", name, err)
	}
	rec, err := c.Store.ReadInterface(uid, name)
	var verr *cache.VersionError
	var ce *cache.CorruptError
	switch {
	case errors.Is(err, cache.ErrNotExist):
		return nil, &MissingCacheError{Interface: name, Path: path, Err: err}
	case errors.As(err, &verr):
		return nil, fmt.Errorf(`phase2: interface %q: %w %s: version is "%d", the VMI wants "%d": %w (run phase1 again)`,
			name, ErrStaleCache, path, verr.Got, verr.Want, err)
	case errors.As(err, &ce) && ce.Field != "":
		// cache refused one of its values (not an address, a prefix or a MAC).
		return nil, invalidRecord(name, path, ce.Field, ce.Value, ce.Err.Error())
	case err != nil:
		return nil, fmt.Errorf("phase2: interface %q: %w", name, err)
	}
	for _, f := range []struct{ field, got, want string }{
		{"interface", rec.Interface, name},
		{"binding", rec.Binding, p.Binding()},
		{"podInterface", rec.PodInterface, p.PodInterface},
	} {
		if f.got != f.want {
			return nil, fmt.Errorf("phase2: interface %q: %w %s: %s is %q, the VMI wants %q (run phase1 again)",
				name, ErrStaleCache, path, f.field, f.got, f.want)
		}
	}
	if err := checkRecord(path, rec); err != nil {
		return nil, err
	}
	// Phase1 writes the interface record before it prepares the kernel;
	// only its progress record says the bridge and tap are there.
	podPath, _ := c.Store.ProgressPath(uid, name)
	pod, err := c.Store.ReadProgress(uid, name)
	if err != nil {
		return nil, &NotReadyError{Interface: name, Path: podPath, Err: err}
	}
	if pod.State != cache.Finished {
		return nil, &NotReadyError{Interface: name, Path: podPath, State: pod.State}
	}
	return rec, nil
}

// ReadRecords is [Items] with the VMI's pairs (api.Pairs) and the records
// of phase1's cache ([CacheRecords]): what prestart.Hook's network step
// reads, for a tool that renders with [Render] itself.
func ReadRecords(ctx context.Context, vmi *api.VMI, store *cache.Store, opts Options) ([]Item, error) {
	pairs, err := api.Pairs(vmi)
	if err != nil {
		return nil, err
	}
	return Items(ctx, vmi, pairs, CacheRecords{Store: store}, opts)
}

// Items resolves the binding of every present pair of a validated VMI in
// opts.Registry (the only option it uses) and reads from src the records
// the bindings need. pairs are api.Pairs(vmi), or the same with the pod
// interface names KubeVirt 1.x reports in status.interfaces (the binding
// sidecar's). An absent pair (state: absent) is skipped: it is not
// rendered and phase1 removes its records. The items are in
// spec.domain.devices.interfaces order.
func Items(ctx context.Context, vmi *api.VMI, pairs []api.Pair, src Records, opts Options) ([]Item, error) {
	reg := opts.registry()
	present, _ := api.Present(pairs)
	items := make([]Item, 0, len(present))
	for _, p := range present {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b, err := reg.Lookup(p.Binding())
		if err != nil {
			return nil, fmt.Errorf("phase2: interface %q: %w", p.Interface.Name, err)
		}
		it := Item{Pair: p, Binding: b}
		if b.NeedsRecord() {
			if it.Record, err = src.Record(ctx, vmi, p); err != nil {
				return nil, err
			}
		}
		items = append(items, it)
	}
	slices.SortFunc(items, func(a, b Item) int { return a.Pair.Index - b.Pair.Index })
	return items, nil
}

// Render has each item's binding add its device to dom, in the items'
// order, and sizes the PCI controllers again for them
// (domxml.EnsureRootPorts; the interfaces and host devices dom has already
// are its maker's to place, KubeVirt's hotplug placeholders among them). A
// rendered <interface> or <hostdev> whose alias dom has already replaces
// that device in place (a domain rendered before); the others follow
// dom's own; everything else in dom is kept. A dom with two devices of
// one alias (two interfaces, two host devices, or one of each) is refused
// before anything is rendered: which one to replace would be a guess
// ([Sync] applies the same rule to the running domain). It is the one render of the
// launcher's hook (prestart), its dry run ([Domain]) and the binding
// sidecar.
func Render(vmi *api.VMI, items []Item, dom *libvirtxml.Domain, opts binding.RenderOptions) error {
	devs := dom.Devices
	if devs == nil {
		if err := renderItems(vmi, items, dom, opts); err != nil {
			return err
		}
		return domxml.EnsureRootPorts(dom)
	}
	ifaceAt, hostdevAt, err := deviceAliases(dom)
	if err != nil {
		return err
	}
	ifaces, hostdevs := devs.Interfaces, devs.Hostdevs
	devs.Interfaces, devs.Hostdevs = nil, nil
	err = renderItems(vmi, items, dom, opts)
	if err == nil {
		err = domxml.EnsureRootPorts(dom)
	}
	if err != nil {
		devs.Interfaces, devs.Hostdevs = ifaces, hostdevs
		return err
	}
	devs.Interfaces = merge(ifaces, devs.Interfaces, ifaceAt, func(d *libvirtxml.DomainInterface) *libvirtxml.DomainAlias { return d.Alias })
	devs.Hostdevs = merge(hostdevs, devs.Hostdevs, hostdevAt, func(d *libvirtxml.DomainHostdev) *libvirtxml.DomainAlias { return d.Alias })
	return nil
}

// deviceAliases is the one rule [Render] and [Sync] apply to the aliases
// of a domain they are given: it maps the aliases of the domain's
// interfaces and of its host devices to their index, and refuses, naming
// the alias, two interfaces of one alias, two host devices of one alias
// and an interface and a host device of one alias (libvirt's aliases are
// unique among all of a domain's devices; which device is meant would be
// a guess).
func deviceAliases(dom *libvirtxml.Domain) (ifaces, hostdevs map[string]int, err error) {
	ifaces, hostdevs = map[string]int{}, map[string]int{}
	if dom.Devices == nil {
		return ifaces, hostdevs, nil
	}
	if err := aliasIndex(dom.Devices.Interfaces, func(d *libvirtxml.DomainInterface) *libvirtxml.DomainAlias { return d.Alias }, "interfaces", ifaces); err != nil {
		return nil, nil, err
	}
	if err := aliasIndex(dom.Devices.Hostdevs, func(d *libvirtxml.DomainHostdev) *libvirtxml.DomainAlias { return d.Alias }, "host devices", hostdevs); err != nil {
		return nil, nil, err
	}
	for i := range dom.Devices.Hostdevs {
		if a := dom.Devices.Hostdevs[i].Alias; a != nil {
			if _, ok := ifaces[a.Name]; ok {
				return nil, nil, fmt.Errorf("phase2: domain XML: an interface and a host device with alias %q: refusing to guess which is meant", a.Name)
			}
		}
	}
	return ifaces, hostdevs, nil
}

// aliasIndex maps the aliases of devs to their index in at; two devices of
// one alias are an error naming it.
func aliasIndex[T any](devs []T, alias func(*T) *libvirtxml.DomainAlias, kind string, at map[string]int) error {
	for i := range devs {
		a := alias(&devs[i])
		if a == nil {
			continue
		}
		if _, ok := at[a.Name]; ok {
			return fmt.Errorf("phase2: domain XML: two %s with alias %q: refusing to guess which is meant", kind, a.Name)
		}
		at[a.Name] = i
	}
	return nil
}

// merge puts each added device in the place of the device of have with
// its alias (at), or after have's.
func merge[T any](have, added []T, at map[string]int, alias func(*T) *libvirtxml.DomainAlias) []T {
	out := slices.Clone(have)
	for i := range added {
		if a := alias(&added[i]); a != nil {
			if j, ok := at[a.Name]; ok {
				out[j] = added[i]
				continue
			}
		}
		out = append(out, added[i])
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// renderItems has each item's binding add its device to dom.
func renderItems(vmi *api.VMI, items []Item, dom *libvirtxml.Domain, opts binding.RenderOptions) error {
	for _, it := range items {
		in := binding.RenderInput{VMI: vmi, Pair: it.Pair, Record: it.Record, Options: opts}
		if err := it.Binding.Render(in, dom); err != nil {
			return fmt.Errorf("phase2: interface %q: %s %w: %w", it.Pair.Interface.Name, it.Binding.Method(), ErrRender, err)
		}
	}
	return nil
}

// Options are the choices of [Domain], [ReadRecords], [Items] and [Sync];
// the zero value is the defaults.
type Options struct {
	// Build are domxml's directories; its Interfaces hook is replaced.
	Build domxml.Options
	// Render are the bindings' choices (interface type, environment).
	Render binding.RenderOptions
	// Registry maps binding methods to implementations; nil means
	// registry.Default().
	Registry binding.Registry
}

func (o Options) registry() binding.Registry {
	if o.Registry == nil {
		return registry.Default()
	}
	return o.Registry
}

// Domain is the dry run of a launcher: the whole domain XML of a validated
// VMI (domxml.Build with the interfaces of [ReadRecords] and [Render]),
// and nothing else. It starts no DHCP server and writes no image, so a
// guest booted from it gets no address on a bridge or masquerade
// interface: a launcher uses prestart.Hook, which renders the same
// interfaces and also starts the DHCP servers the bindings ask for. The
// records are read before anything is built, so a missing or stale cache
// fails fast.
func Domain(ctx context.Context, vmi *api.VMI, store *cache.Store, opts Options) (*libvirtxml.Domain, error) {
	items, err := ReadRecords(ctx, vmi, store, opts)
	if err != nil {
		return nil, err
	}
	bo := opts.Build
	// Build sizes the PCI controllers after this hook.
	bo.Interfaces = func(dom *libvirtxml.Domain) error { return renderItems(vmi, items, dom, opts.Render) }
	return domxml.Build(vmi, bo)
}
