package phase2

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

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

// ReadRecords resolves the binding of every pair of a validated VMI in
// opts.Registry (the only option it uses) and reads the records the
// bindings need, checking that each belongs to the pair. The items are in
// spec.domain.devices.interfaces order. With [Render] it is what
// prestart.Hook's network step and KubeVirt 1.x hook sidecars (which get
// their domain from KubeVirt) build on.
func ReadRecords(ctx context.Context, vmi *api.VMI, store *cache.Store, opts Options) ([]Item, error) {
	reg := opts.Registry
	if reg == nil {
		reg = registry.Default()
	}
	all, err := api.Pairs(vmi)
	if err != nil {
		return nil, err
	}
	// An absent interface (state: absent) is not rendered, and phase1
	// has removed (or will remove) its records.
	pairs, _ := api.Present(all)
	items := make([]Item, 0, len(pairs))
	for _, p := range pairs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b, err := reg.Lookup(p.Binding())
		if err != nil {
			return nil, fmt.Errorf("phase2: interface %q: %w", p.Interface.Name, err)
		}
		it := Item{Pair: p, Binding: b}
		if b.NeedsRecord() {
			if it.Record, err = readRecord(vmi, store, p); err != nil {
				return nil, err
			}
		}
		items = append(items, it)
	}
	slices.SortFunc(items, func(a, b Item) int { return a.Pair.Index - b.Pair.Index })
	return items, nil
}

func readRecord(vmi *api.VMI, store *cache.Store, p api.Pair) (*cache.Interface, error) {
	name := p.Interface.Name
	path, err := store.InterfacePath(vmi.Metadata.UID, name)
	if err != nil {
		return nil, fmt.Errorf("phase2: interface %q: %w", name, err)
	}
	rec, err := store.ReadInterface(vmi.Metadata.UID, name)
	var verr *cache.VersionError
	switch {
	case errors.Is(err, cache.ErrNotExist):
		return nil, &MissingCacheError{Interface: name, Path: path, Err: err}
	case errors.As(err, &verr):
		return nil, &StaleCacheError{Interface: name, Path: path, Field: "version",
			Got: strconv.Itoa(verr.Got), Want: strconv.Itoa(verr.Want), Err: err}
	case err != nil:
		return nil, recordError(name, path, err)
	}
	for _, f := range []struct{ field, got, want string }{
		{"interface", rec.Interface, name},
		{"binding", rec.Binding, p.Binding()},
		{"podInterface", rec.PodInterface, p.PodInterface},
	} {
		if f.got != f.want {
			return nil, &StaleCacheError{Interface: name, Path: path, Field: f.field, Got: f.got, Want: f.want}
		}
	}
	if err := checkRecord(path, rec); err != nil {
		return nil, err
	}
	// Phase1 writes the interface record before it prepares the kernel;
	// only its progress record says the bridge and tap are there.
	podPath, _ := store.ProgressPath(vmi.Metadata.UID, name)
	pod, err := store.ReadProgress(vmi.Metadata.UID, name)
	if err != nil {
		return nil, &NotReadyError{Interface: name, Path: podPath, Err: err}
	}
	if pod.State != cache.Finished {
		return nil, &NotReadyError{Interface: name, Path: podPath, State: pod.State}
	}
	return rec, nil
}

// Render has each item's binding add its device to dom, in the items'
// order, then sizes the PCI controllers again (domxml.EnsureRootPorts).
func Render(vmi *api.VMI, items []Item, dom *libvirtxml.Domain, opts binding.RenderOptions) error {
	if err := renderItems(vmi, items, dom, opts); err != nil {
		return err
	}
	return domxml.EnsureRootPorts(dom)
}

// renderItems has each item's binding add its device to dom.
func renderItems(vmi *api.VMI, items []Item, dom *libvirtxml.Domain, opts binding.RenderOptions) error {
	for _, it := range items {
		in := binding.RenderInput{VMI: vmi, Pair: it.Pair, Record: it.Record, Options: opts}
		if err := it.Binding.Render(in, dom); err != nil {
			return &RenderError{Interface: it.Pair.Interface.Name, Binding: it.Binding.Method(), Err: err}
		}
	}
	return nil
}

// Options are the choices of [Domain] and [ReadRecords]; the zero value
// is the defaults.
type Options struct {
	// Build are domxml's directories; its Interfaces hook is replaced.
	Build domxml.Options
	// Render are the bindings' choices (interface type, environment).
	Render binding.RenderOptions
	// Registry maps binding methods to implementations; nil means
	// registry.Default().
	Registry binding.Registry
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
