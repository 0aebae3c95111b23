package phase1

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/virtnet/virtnet/netdriver/kernel"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/binding/registry"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/internal/names"
	"github.com/virtnet/virtnet/netdriver"
)

// Options tune [Run] and [Cleanup]. The zero value is ready to use.
type Options struct {
	// Registry maps binding methods to implementations; nil means
	// registry.Default().
	Registry binding.Registry
	// Logger receives progress; nil discards it.
	Logger *slog.Logger
	// Driver, when set, is used instead of opening netnsPath (tests and
	// the example's simulated pod use netdrivertest.Fake).
	Driver netdriver.Driver
	// KeepOnFailure leaves the namespace and the records as a failure
	// left them (for debugging, and to test resuming). By default a
	// failure after the first change undoes every interface the run
	// began and no earlier run had finished with its binding's Cleanup
	// and removes their records, so that nothing half-applied stays
	// behind; either way a re-run converges.
	KeepOnFailure bool
	// TapOwner overrides the owner (uid and gid) of the taps: the zero
	// value keeps the VMI's ([TapOwnerFor]), [TapOwnerUID] names one
	// (root included).
	TapOwner TapOwner
	// PrimaryPodIP is the pod's primary IP (its status.podIP); its family
	// comes first in a dual-stack pod's recorded PodIPs, as KubeVirt
	// orders them. "" means the MY_POD_IP environment variable (the
	// downward API variable KubeVirt's launcher pod sets), and IPv4 first
	// when that is unset too.
	PrimaryPodIP string
	// LockWait bounds how long Run and Cleanup wait for another run of
	// the same VMI or namespace to release its lock (see the package
	// doc); 0 waits as long as the context allows, a negative value not
	// at all. The error then matches [ErrLocked].
	LockWait time.Duration
	// Attachment, when set, is recorded with the records' namespace (a
	// CNI plugin's container ID and CNI_IFNAME, so that its GC can tell
	// the records of attachments that are gone).
	Attachment *cache.Attachment
	// MigrationTarget runs phase1 for a live migration's target pod: the
	// same VMI, in a fresh pod, whose VM arrives running with the
	// source's MACs. The VMI must carry the source's status.interfaces:
	// a bridge interface without macAddress and without a status MAC is
	// refused before any change (the target's DHCP server must answer the
	// migrated vNIC's MAC, not the target pod link's; see
	// docs/migration.md).
	MigrationTarget bool
}

// PodIPEnv is the environment variable [Options.PrimaryPodIP] defaults
// to.
const PodIPEnv = "MY_POD_IP"

// TapOwnerFor is the uid and gid the taps of a VMI get, as KubeVirt v0.53
// chooses them: root (0) for a root VMI, the default of v0.53 (non-root
// was a feature gate), so that a root libvirt without CAP_NET_ADMIN can
// open them; [api.QemuID] for a non-root VMI ([api.VMI.NonRoot]).
// [Options.TapOwner] overrides it. Passt's ping group follows the same
// owner.
func TapOwnerFor(vmi *api.VMI) int {
	if vmi != nil && vmi.NonRoot() {
		return api.QemuID
	}
	return 0
}

// TapOwner is who owns the taps phase1 creates ([Options.TapOwner]). Its
// zero value is the VMI's own choice ([TapOwnerFor]); [TapOwnerUID] names
// a uid.
type TapOwner struct {
	uid int
	set bool
}

// TapOwnerUID makes uid the owner and gid of the taps: 0 for root,
// [api.QemuID] for the qemu user, whatever the VMI says.
func TapOwnerUID(uid int) TapOwner { return TapOwner{uid: uid, set: true} }

// maxUID bounds the uid of [TapOwnerUID], as the binding CNI plugin
// bounds its tapOwner.
const maxUID = 1<<31 - 2

// For is the uid and gid the taps of vmi get: the one [TapOwnerUID] named,
// else [TapOwnerFor].
func (o TapOwner) For(vmi *api.VMI) int {
	if o.set {
		return o.uid
	}
	return TapOwnerFor(vmi)
}

func (o *Options) fill() {
	if o.Registry == nil {
		o.Registry = registry.Default()
	}
	o.Logger = cmp.Or(o.Logger, slog.New(slog.DiscardHandler))
	o.PrimaryPodIP = cmp.Or(o.PrimaryPodIP, os.Getenv(PodIPEnv))
}

// Run runs phase1 for every interface of a VMI that [api.Load] (or
// [api.Validate]) passed, in the network namespace at netnsPath, writing
// the caches to store. It does not validate the VMI again (a VMI no
// validation passed is refused with [api.ErrNotValidated]); it checks what
// the manifest cannot say: the bindings of opts.Registry, the pod's links,
// the records. It returns the
// first failure as an [*Error]; running it again resumes and converges.
//
// Each interface is a transaction ([ifaceTxn]): every record of the VMI
// is read and every interface discovered and planned before the first
// change to the namespace, and a failure after that (a kernel step, a
// cache write, the context) undoes every interface this run began that no
// earlier run had finished, unless [Options.KeepOnFailure] is set. So the
// first run of a VMI gives it all of its interfaces or none, and a re-run
// on a VMI that already runs never takes away an interface an earlier run
// finished.
//
// A re-run on a VMI that already runs (an earlier run finished one of its
// interfaces) is an update whose changes stand alone: a new interface
// that cannot be discovered, planned or prepared (its pod link missing, a
// kernel step failing) is undone alone and the others are plugged; a
// failed re-check of a finished interface leaves it as it is; an absent
// interface is unplugged whatever happens to the others. The error then
// joins each failure, naming its interface ([*Error]), and a re-run
// converges (TestUpdateChangesStandAlone).
//
// An interface whose state is absent (KubeVirt 1.x's hot-unplug) is not
// prepared; what an earlier run prepared for it is removed, and its
// records deleted, before the other interfaces are planned or prepared,
// its pod link being gone already or not (TestAbsentInterface).
func Run(ctx context.Context, vmi *api.VMI, netnsPath string, store *cache.Store, opts Options) (err error) {
	opts.fill()
	all, err := pairsOf(vmi, opts)
	if err != nil {
		return err
	}
	if err := opts.Registry.Check(vmi); err != nil {
		// Before any change, with the path and the names known (Cleanup
		// does not check: it undoes what the records name).
		return &Error{Step: StepValidate, Err: err}
	}
	pairs, absent := api.Present(all)
	if opts.MigrationTarget {
		if err := checkTarget(vmi, pairs); err != nil {
			return err
		}
	}
	locks, err := takeLocks(ctx, vmi, netnsPath, store, opts)
	if err != nil {
		return err
	}
	defer locks.unlock(&err)
	recs := locks.recs
	if err := locks.checkNamespace(); err != nil {
		return err
	}
	if n, err := recs.RemoveTemps(); err != nil {
		return &Error{Step: StepRead, Err: err}
	} else if n > 0 {
		opts.Logger.Info("removed temporary files an interrupted run left", "count", n)
	}
	states, recorded, err := readRecords(recs, pairs)
	if err != nil {
		return err
	}
	if _, _, err := readRecords(recs, absent); err != nil {
		return err
	}
	d, closeFn, err := driverFor(netnsPath, opts)
	if err != nil {
		return err
	}
	defer closeFn()

	// An update (the VMI has an interface an earlier run finished) is a
	// set of changes that stand alone: an absent interface is unplugged,
	// and each new one plugged, whatever happens to the others. The first
	// run stays all or none.
	update := slices.ContainsFunc(states, func(p *cache.Progress) bool { return p != nil && p.State == cache.Finished })
	// An absent interface (KubeVirt 1.x's hot-unplug) loses what an
	// earlier run prepared for it, its pod link possibly gone already;
	// one never prepared has no record and is skipped. It comes first, so
	// that no plug of the same update can hold it back.
	var failed []error
	if err := cleanupPairs(ctx, d, vmi, absent, recs, opts, func(int) bool { return true }); err != nil {
		if !update {
			return err
		}
		failed = append(failed, err)
	}

	// Discover and plan every pair before changing anything.
	txns := make([]ifaceTxn, 0, len(pairs))
	var planned []api.Pair
	for i, p := range pairs {
		if err := ctx.Err(); err != nil {
			return joinErrors(append(failed, &Error{Step: StepCanceled, Err: err}))
		}
		run, err := planPair(ctx, d, vmi, p, states[i], recorded[i], opts)
		if err != nil {
			if !update {
				return err
			}
			// This interface's change alone fails; one an earlier run
			// finished stays as it is.
			failed = append(failed, err)
			continue
		}
		txns = append(txns, ifaceTxn{pairRun: run, committed: states[i] != nil && states[i].State == cache.Finished})
		planned = append(planned, p)
	}
	pairs = planned
	rollback := func(err error, only ...int) error {
		err = joinErrors(append(failed, err))
		if opts.KeepOnFailure {
			return err
		}
		undo := txns
		undoPairs := pairs
		if len(only) > 0 {
			undo, undoPairs = []ifaceTxn{txns[only[0]]}, []api.Pair{pairs[only[0]]}
		}
		// Even when the failure is the caller's cancellation.
		if cerr := rollbackTxns(context.WithoutCancel(ctx), d, vmi, undoPairs, undo, recs, opts); cerr != nil {
			opts.Logger.Error("rollback failed; a re-run resumes from the cache", "error", cerr)
			return errors.Join(err, fmt.Errorf("rollback: %w", cerr))
		}
		if err := forgetIfEmpty(recs); err != nil {
			opts.Logger.Error("rollback left the VMI's record directory", "error", err)
		}
		opts.Logger.Warn("phase1 failed and was rolled back", "error", err)
		return err
	}
	// standAlone undoes interface i alone (an update's new interface that
	// failed) and goes on with the others; it reports whether it did.
	standAlone := func(i int, err error) bool {
		if !update {
			return false
		}
		if txns[i].committed {
			// An earlier run finished it: never undone, left as the
			// failed re-check left it (a re-run repairs it).
			failed = append(failed, err)
			txns[i].skip = true
			return true
		}
		if rerr := rollback(err, i); rerr != nil {
			failed = []error{rerr}
		}
		txns[i].skip = true
		return true
	}
	wrote := false
	if locks.nsID != "" {
		// Bind the records to the namespace they describe, before the
		// first of them.
		w, err := recs.PutNamespace(locks.nsID, opts.Attachment)
		wrote = w
		if err != nil {
			return rollback(&Error{Step: StepNamespace, Err: err})
		}
	}
	for i := range txns {
		if err := ctx.Err(); err != nil {
			return rollback(&Error{Step: StepCanceled, Err: err})
		}
		txns[i].begun = true
		w, err := txns[i].prepare(ctx, d, recs)
		wrote = wrote || w
		if err != nil && !standAlone(i, err) {
			return rollback(err)
		}
	}
	// Only now is every interface ready: mark them all finished, then
	// make the records durable with one directory fsync.
	for i := range txns {
		if txns[i].skip {
			continue
		}
		w, err := txns[i].commit(recs)
		wrote = wrote || w
		if err != nil && !standAlone(i, err) {
			return rollback(err)
		}
	}
	if wrote {
		if err := recs.Sync(); err != nil {
			return rollback(&Error{Step: StepRecord, Err: err})
		}
	}
	for i := range txns {
		if !txns[i].skip {
			txns[i].in.Logger.Info("interface ready")
		}
	}
	return joinErrors(failed)
}

// joinErrors is errors.Join, but the one error itself when there is one.
func joinErrors(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

// forgetIfEmpty removes the VMI's record directory (its namespace record
// with it) when no interface record is left in it, so that a failed first
// run leaves no directory behind.
func forgetIfEmpty(recs *cache.Dir) error {
	has, err := recs.HasRecords()
	if err != nil || has {
		return err
	}
	return recs.Remove()
}

// ifaceTxn is one interface's transaction inside a [Run]: begun when the
// run first writes its record or touches the namespace for it
// ([pairRun.prepare]), committed when its record says "finished"
// ([ifaceTxn.commit]). A failure of the run rolls back the transactions
// it began and did not find committed ([rollbackTxns]); an interface an
// earlier run committed is never rolled back by a later run that fails or
// is cancelled, since a VM may be using it (its tap open in QEMU). The
// re-run only re-checks it (every step is create-or-replace): a failure
// half-way through that check leaves it as the earlier run left it or
// repaired further, and a re-run converges.
type ifaceTxn struct {
	pairRun
	// committed: the interface's record said "finished" before this run.
	committed bool
	// begun: this run wrote a record of the interface or called its
	// binding's Prepare.
	begun bool
	// skip: an update's new interface that failed and was undone alone.
	skip bool
}

// commit marks the interface finished (a no-op write for one an earlier
// run committed).
func (t *ifaceTxn) commit(recs *cache.Dir) (wrote bool, err error) {
	done := *t.pod
	done.State = cache.Finished
	w, err := recs.PutProgress(&done)
	if err != nil {
		return w, &Error{Interface: t.in.Pair.Interface.Name, Step: StepRecord, Err: err}
	}
	return w, nil
}

// rollbackTxns undoes, last first, the transactions of txns (one per
// pair) that this run began and that no earlier run had committed.
func rollbackTxns(ctx context.Context, d netdriver.Driver, vmi *api.VMI, pairs []api.Pair, txns []ifaceTxn, recs *cache.Dir, opts Options) error {
	var undo []api.Pair
	var resumed []bool
	for i, t := range txns {
		if !t.begun || t.committed || t.skip {
			continue
		}
		undo = append(undo, pairs[i])
		resumed = append(resumed, t.in.Resumed)
	}
	return cleanupPairs(ctx, d, vmi, undo, recs, opts, func(i int) bool { return resumed[i] })
}

// readRecords reads every record of the VMI's pairs before any kernel
// call, so that an unsafe, corrupt or foreign record of any interface
// fails the run before it changed anything. It returns the pod-interface
// record of each pair (nil when never written) and its interface record
// (nil when none).
func readRecords(recs *cache.Dir, pairs []api.Pair) ([]*cache.Progress, []*cache.Interface, error) {
	out := make([]*cache.Progress, len(pairs))
	ifaces := make([]*cache.Interface, len(pairs))
	for i, p := range pairs {
		name := p.Interface.Name
		fail := func(err error) error { return &Error{Interface: name, Step: StepRead, Err: err} }
		pod, err := recs.ReadProgress(name) // nil when never written
		if err != nil && !errors.Is(err, cache.ErrNotExist) {
			return nil, nil, fail(err)
		}
		rec, err := recs.ReadInterface(name) // nil when never written
		if err != nil && !errors.Is(err, cache.ErrNotExist) {
			return nil, nil, fail(err)
		}
		if pod != nil && pod.Binding == p.Binding() && pod.PodInterface != p.PodInterface && !p.Primary() {
			// Ordinal names (net1, net2, …) follow spec.networks: a
			// network inserted or deleted before this one moved it.
			return nil, nil, fail(fmt.Errorf("network %q: its pod interface %s was prepared as %s: a network was inserted "+
				"or removed before it while the VMI ran; append networks at the end and unplug with state: absent, "+
				"or name pod interfaces by network (metadata.annotations[%s]: hashed) for a VMI whose interfaces change",
				p.Network.Name, p.PodInterface, pod.PodInterface, api.PodInterfaceNamesAnnotation))
		}
		if pod != nil && (pod.Binding != p.Binding() || pod.PodInterface != p.PodInterface) {
			return nil, nil, fail(fmt.Errorf("cache says binding %s on %s, the VMI says %s on %s: clean up first",
				pod.Binding, pod.PodInterface, p.Binding(), p.PodInterface))
		}
		if pod != nil && pod.State == cache.Pending {
			pod = nil
		}
		out[i] = pod
		if pod != nil {
			ifaces[i] = rec
		}
	}
	return out, ifaces, nil
}

// keepRecordedNames has in use the link names the interface record was
// made with, where it has them: a pod prepared by an earlier release,
// whose names differ (virtnet before v0.1.0 gave a hashed pod interface's bridge
// and NIC hashed short forms, where KubeVirt v1.9.0's names are used
// now), is resumed and cleaned up under its own names. A recorded name
// that is not a link name is ignored.
func keepRecordedNames(in *binding.Input, rec *cache.Interface) {
	if rec == nil {
		return
	}
	for _, n := range []struct {
		rec string
		dst *string
	}{{rec.Bridge, &in.Names.Bridge}, {rec.Tap, &in.Names.Tap}, {rec.NIC, &in.Names.NIC}} {
		if n.rec != "" && names.CheckLinkName(n.rec) == nil {
			*n.dst = n.rec
		}
	}
}

// pairsOf pairs the networks and interfaces of a VMI that api.Load (or
// api.Validate) passed: phase1 does not validate it again. It checks only
// its own options.
func pairsOf(vmi *api.VMI, opts Options) ([]api.Pair, error) {
	if o := opts.TapOwner; o.set && (o.uid < 0 || o.uid > maxUID) {
		return nil, &Error{Step: StepValidate, Err: fmt.Errorf("Options.TapOwner %d: not a uid (0 to %d)", o.uid, maxUID)}
	}
	if !vmi.Validated() {
		return nil, &Error{Step: StepValidate, Err: fmt.Errorf("VMI %s/%s (uid %q): %w", vmi.Metadata.Namespace, vmi.Metadata.Name, vmi.Metadata.UID, api.ErrNotValidated)}
	}
	pairs, err := api.Pairs(vmi)
	if err != nil {
		return nil, &Error{Step: StepValidate, Err: err}
	}
	return pairs, nil
}

func driverFor(netnsPath string, opts Options) (netdriver.Driver, func(), error) {
	if opts.Driver != nil {
		return opts.Driver, func() {}, nil
	}
	d, closeFn, err := kernel.OpenDriver(netnsPath)
	if err != nil {
		return nil, nil, &Error{Step: StepOpen, Err: err}
	}
	return d, func() { _ = closeFn() }, nil
}

// InputFor builds the binding input of a pair.
func InputFor(vmi *api.VMI, p api.Pair, opts Options) binding.Input {
	opts.fill()
	logger := opts.Logger
	links := names.For(p.PodInterface, p.Primary())
	return binding.Input{
		TapOwner: opts.TapOwner.For(vmi),
		VMI:      vmi,
		Pair:     p,
		Names:    binding.Names{Pod: p.PodInterface, NIC: links.NIC, Bridge: links.Bridge, Tap: links.Tap},
		Logger:   logger.With("interface", p.Interface.Name, "podInterface", p.PodInterface, "binding", p.Binding()),
	}
}

// pairRun is one pair, discovered and planned, ready to prepare.
type pairRun struct {
	b    binding.Binding
	in   binding.Input
	link *cache.Link
	rec  *cache.Interface
	// pod is the pair's record as it will be written before Prepare.
	pod *cache.Progress
}

// planPair discovers the pair (unless a record says it was) and plans its
// interface record; it changes nothing.
func planPair(ctx context.Context, d netdriver.Driver, vmi *api.VMI, p api.Pair, pod *cache.Progress, recorded *cache.Interface, opts Options) (pairRun, error) {
	name := p.Interface.Name
	fail := func(step string, err error) error { return &Error{Interface: name, Step: step, Err: err} }
	b, err := opts.Registry.Lookup(p.Binding())
	if err != nil {
		return pairRun{}, fail(StepValidate, err)
	}
	in := InputFor(vmi, p, opts)
	in.Resumed = pod != nil
	if in.Resumed {
		keepRecordedNames(&in, recorded)
	}
	var link *cache.Link
	state := cache.Started
	if pod == nil {
		if link, err = b.Discover(ctx, d, in); err != nil {
			return pairRun{}, fail(StepDiscover, err)
		}
		in.Logger.Info("discovered pod link", linkAttrs(link)...)
	} else {
		link, state = pod.Discovered, max(pod.State, cache.Started)
		in.Logger.Info("resuming from the recorded discovery", "state", pod.State)
	}
	rec, err := b.Plan(in, link)
	if err != nil {
		return pairRun{}, fail(StepPlan, err)
	}
	if rec != nil {
		rec.Interface, rec.PodInterface, rec.Binding = name, p.PodInterface, p.Binding()
		if in.Resumed && recorded != nil && recorded.ServerIPv4.IsValid() && rec.ServerIPv4.IsValid() {
			// The address the bridge and the DHCP server have: derived
			// from the interface's index, which moves when an earlier
			// interface leaves the spec after its unplug.
			rec.ServerIPv4 = recorded.ServerIPv4
		}
	}
	return pairRun{b: b, in: in, link: link, rec: rec, pod: &cache.Progress{
		Interface:    name,
		Network:      p.Network.Name,
		PodInterface: p.PodInterface,
		Binding:      p.Binding(),
		State:        state,
		PodIPs:       podIPs(link, opts.PrimaryPodIP),
		Discovered:   link,
	}}, nil
}

// prepare records the discovery (state "started") and the plan, then
// prepares the namespace. wrote reports whether a record was written.
func (r *pairRun) prepare(ctx context.Context, d netdriver.Driver, recs *cache.Dir) (wrote bool, err error) {
	fail := func(step string, err error) error {
		return &Error{Interface: r.in.Pair.Interface.Name, Step: step, Err: err}
	}
	w, err := recs.PutProgress(r.pod)
	if err != nil {
		return w, fail(StepRecord, err)
	}
	wrote = w
	if r.rec != nil {
		w, err := recs.PutInterface(r.rec)
		wrote = wrote || w
		if err != nil {
			return wrote, fail(StepRecord, err)
		}
	}
	if err := r.b.Prepare(ctx, d, r.in, r.link, r.rec); err != nil {
		return wrote, fail(StepPrepare, err)
	}
	return wrote, nil
}

// podIPs are the first global IPv4 and IPv6 addresses of the link, the
// family of primary (the pod's primary IP) first, IPv4 first when primary
// is not an address (KubeVirt orders them after MY_POD_IP).
func podIPs(l *cache.Link, primary string) []netip.Addr {
	if l == nil {
		return nil
	}
	var v4, v6 netip.Addr
	for _, a := range l.Addresses {
		switch ip := a.Addr(); {
		case ip.Is4() && !v4.IsValid():
			v4 = ip
		case !ip.Is4() && !v6.IsValid():
			v6 = ip
		}
	}
	order := []netip.Addr{v4, v6}
	if p, err := netip.ParseAddr(primary); err == nil && p.Unmap().Is6() {
		order = []netip.Addr{v6, v4}
	}
	var out []netip.Addr
	for _, ip := range order {
		if ip.IsValid() {
			out = append(out, ip)
		}
	}
	return out
}

// linkAttrs are the log attributes of a discovered link: plain values,
// never the record dumped as one.
func linkAttrs(l *cache.Link) []any {
	if l == nil {
		return []any{"link", ""}
	}
	addrs := make([]string, len(l.Addresses))
	for i, a := range l.Addresses {
		addrs[i] = a.String()
	}
	return []any{"link", l.Name, "type", l.Type, "mac", l.MAC.String(), "mtu", l.MTU,
		"addresses", strings.Join(addrs, ","), "routes", len(l.Routes)}
}
