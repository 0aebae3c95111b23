package phase1

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/binding/registry"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/internal/names"
	"github.com/virtnet/virtnet/internal/netdriver"
)

// Options tune [Run] and [Cleanup]. The zero value is ready to use.
type Options struct {
	// Registry maps binding methods to implementations; nil means
	// registry.Default().
	Registry binding.Registry
	// Logger receives progress; nil discards it.
	Logger *slog.Logger
	// Driver, when set, is used instead of opening netnsPath (tests and
	// the example's simulated pod use netdriver.Fake).
	Driver netdriver.Driver
	// KeepOnFailure leaves a failed interface as the failure left it
	// (for debugging, and to test resuming). By default a failed Prepare
	// is undone with the binding's Cleanup and the interface's records
	// are removed, so that nothing half-applied stays behind; either way
	// a re-run converges.
	KeepOnFailure bool
	// TapOwner overrides the owner (uid and gid) of the taps; 0 means
	// the VMI's ([TapOwnerFor]). Use a negative value for root (0).
	TapOwner int
	// PrimaryPodIP is the pod's primary IP (its status.podIP); its family
	// comes first in a dual-stack pod's recorded PodIPs, as KubeVirt
	// orders them. "" means the MY_POD_IP environment variable (the
	// downward API variable KubeVirt's launcher pod sets), and IPv4 first
	// when that is unset too.
	PrimaryPodIP string
}

// PodIPEnv is the environment variable [Options.PrimaryPodIP] defaults
// to.
const PodIPEnv = "MY_POD_IP"

// NonRootTapOwner is the qemu user of KubeVirt's launcher images, which
// owns the taps of non-root VMIs.
const NonRootTapOwner = 107

// TapOwnerFor is the uid and gid the taps of a VMI get, as KubeVirt v0.53
// chooses them: root (0) for a root VMI, the default of v0.53 (non-root
// was a feature gate), so that a root libvirt without CAP_NET_ADMIN can
// open them; [NonRootTapOwner] for a non-root VMI ([api.VMI.NonRoot]).
// A non-zero override wins (negative: root). Passt's ping group follows
// the same owner.
func TapOwnerFor(vmi *api.VMI, override int) int {
	switch {
	case override > 0:
		return override
	case override < 0:
		return 0
	case vmi != nil && vmi.NonRoot():
		return NonRootTapOwner
	}
	return 0
}

func (o *Options) fill() {
	if o.Registry == nil {
		o.Registry = registry.Default()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.PrimaryPodIP == "" {
		o.PrimaryPodIP = os.Getenv(PodIPEnv)
	}
}

// Run runs phase1 for every interface of a validated VMI in the network
// namespace at netnsPath, writing the caches to store. It returns the
// first failure as an [*Error]; running it again resumes and converges.
func Run(ctx context.Context, vmi *api.VMI, netnsPath string, store *cache.Store, opts Options) error {
	opts.fill()
	pairs, err := pairsOf(vmi)
	if err != nil {
		return err
	}
	d, closeFn, err := driverFor(netnsPath, opts)
	if err != nil {
		return err
	}
	defer closeFn()
	for i, p := range pairs {
		var err error
		if cerr := ctx.Err(); cerr != nil {
			err = &Error{Step: StepCanceled, Err: cerr}
		} else {
			err = runPair(ctx, d, vmi, p, store, opts)
		}
		if err == nil {
			continue
		}
		var pe *Error
		if !opts.KeepOnFailure && i > 0 && errors.As(err, &pe) && pe.Step != StepRead && pe.Step != StepValidate {
			// The VMI gets all of its interfaces or none: undo the
			// ones this run completed before the failure, even when
			// the failure is the caller's cancellation.
			if cerr := cleanupPairs(context.WithoutCancel(ctx), d, vmi, pairs[:i], store, opts); cerr != nil {
				err = errors.Join(err, fmt.Errorf("rollback: %w", cerr))
			}
		}
		return err
	}
	return nil
}

// pairsOf validates the VMI and every name phase1 will give the kernel,
// before any kernel call.
func pairsOf(vmi *api.VMI) ([]api.Pair, error) {
	if err := api.Validate(vmi); err != nil {
		return nil, &Error{Step: StepValidate, Err: err}
	}
	if err := cache.CheckName("VMI UID", vmi.Metadata.UID); err != nil {
		return nil, &Error{Step: StepValidate, Err: fmt.Errorf("metadata.uid: %w", err)}
	}
	pairs, err := api.Pairs(vmi)
	if err != nil {
		return nil, &Error{Step: StepValidate, Err: err}
	}
	for _, p := range pairs {
		if err := names.CheckLinkName(p.PodInterface); err != nil {
			return nil, &Error{Interface: p.Interface.Name, Step: StepValidate, Err: err}
		}
	}
	return pairs, nil
}

func driverFor(netnsPath string, opts Options) (netdriver.Driver, func(), error) {
	if opts.Driver != nil {
		return opts.Driver, func() {}, nil
	}
	d, closeFn, err := netdriver.OpenDriver(netnsPath)
	if err != nil {
		return nil, nil, &Error{Step: StepOpen, Err: err}
	}
	return d, func() { _ = closeFn() }, nil
}

// InputFor builds the binding input of a pair.
func InputFor(vmi *api.VMI, p api.Pair, opts Options) binding.Input {
	opts.fill()
	logger := opts.Logger
	return binding.Input{
		TapOwner: TapOwnerFor(vmi, opts.TapOwner),
		VMI:      vmi,
		Pair:     p,
		Names: binding.Names{
			Pod:    p.PodInterface,
			NIC:    names.NIC(p.PodInterface),
			Bridge: names.Bridge(p.PodInterface),
			Tap:    names.Tap(p.PodInterface),
		},
		Logger: logger.With("interface", p.Interface.Name, "podInterface", p.PodInterface, "binding", p.Binding()),
	}
}

func runPair(ctx context.Context, d netdriver.Driver, vmi *api.VMI, p api.Pair, store *cache.Store, opts Options) error {
	name := p.Interface.Name
	fail := func(step string, err error) error { return &Error{Interface: name, Step: step, Err: err} }
	b, err := opts.Registry.Lookup(p.Binding())
	if err != nil {
		return fail(StepValidate, err)
	}
	in := InputFor(vmi, p, opts)
	uid := vmi.Metadata.UID

	pod, err := store.ReadPodInterface(uid, name)
	switch {
	case errors.Is(err, cache.ErrNotExist):
		pod = &cache.PodInterface{}
	case err != nil:
		return fail(StepRead, err)
	}
	if pod.Binding != "" && (pod.Binding != p.Binding() || pod.PodInterface != p.PodInterface) {
		return fail(StepRead, fmt.Errorf("cache says binding %s on %s, the VMI says %s on %s: clean up first",
			pod.Binding, pod.PodInterface, p.Binding(), p.PodInterface))
	}
	link := pod.Discovered
	if pod.State == cache.Pending {
		link, err = b.Discover(ctx, d, in)
		if err != nil {
			return fail(StepDiscover, err)
		}
		in.Logger.Info("discovered pod link", "link", link)
	} else {
		in.Logger.Info("resuming from the recorded discovery", "state", pod.State)
	}
	want := &cache.PodInterface{
		Interface:    name,
		Network:      p.Network.Name,
		PodInterface: p.PodInterface,
		Binding:      p.Binding(),
		State:        max(pod.State, cache.Started),
		PodIPs:       podIPs(link, opts.PrimaryPodIP),
		Discovered:   link,
	}
	if err := store.WritePodInterface(uid, want); err != nil {
		return fail(StepRecord, err)
	}
	rec, err := b.Plan(in, link)
	if err != nil {
		return fail(StepPlan, err)
	}
	if rec != nil {
		rec.Interface, rec.PodInterface, rec.Binding = name, p.PodInterface, p.Binding()
		if err := store.WriteInterface(uid, rec); err != nil {
			return fail(StepRecord, err)
		}
	}
	if err := b.Prepare(ctx, d, in, link, rec); err != nil {
		if opts.KeepOnFailure {
			return fail(StepPrepare, err)
		}
		return fail(StepPrepare, rollback(context.WithoutCancel(ctx), d, b, in, link, rec, store, err))
	}
	done := *want
	done.State = cache.Finished
	if err := store.WritePodInterface(uid, &done); err != nil {
		return fail(StepRecord, err)
	}
	in.Logger.Info("interface ready")
	return nil
}

// podIPs are the first global IPv4 and IPv6 addresses of the link, the
// family of primary (the pod's primary IP) first, IPv4 first when primary
// is not an address (KubeVirt orders them after MY_POD_IP).
func podIPs(l *cache.Link, primary string) []string {
	if l == nil {
		return nil
	}
	var v4, v6 string
	for _, a := range l.Addresses {
		ip, _, _ := cutPrefix(a)
		switch {
		case isV4(ip) && v4 == "":
			v4 = ip
		case !isV4(ip) && v6 == "":
			v6 = ip
		}
	}
	order := []string{v4, v6}
	if p, err := netip.ParseAddr(primary); err == nil && p.Unmap().Is6() {
		order = []string{v6, v4}
	}
	var out []string
	for _, ip := range order {
		if ip != "" {
			out = append(out, ip)
		}
	}
	return out
}

// rollback undoes a failed Prepare and forgets the interface, so that a
// re-run starts from a fresh discovery. It returns cause, joined with the
// rollback's own failure if any (then the records stay: a re-run resumes).
func rollback(ctx context.Context, d netdriver.Driver, b binding.Binding, in binding.Input, link *cache.Link, rec *cache.Interface, store *cache.Store, cause error) error {
	if err := b.Cleanup(ctx, d, in, link, rec); err != nil {
		in.Logger.Error("rollback failed; a re-run resumes from the cache", "error", err)
		return errors.Join(cause, fmt.Errorf("rollback: %w", err))
	}
	if err := store.Delete(in.VMI.Metadata.UID, in.Pair.Interface.Name); err != nil {
		return errors.Join(cause, fmt.Errorf("rollback: %w", err))
	}
	in.Logger.Warn("prepare failed and was rolled back", "error", cause)
	return cause
}
