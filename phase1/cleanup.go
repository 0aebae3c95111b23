package phase1

import (
	"context"
	"errors"
	"slices"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/netdriver"
)

// Cleanup undoes [Run] for every interface of the VMI, in reverse order,
// returning the namespace to how the CNI left it (as recorded in the
// caches), then deletes the VMI's cache records. Interfaces that phase1
// never touched are skipped; running Cleanup twice, or without Run, is not
// an error. Sysctls that Run set (forwarding, arp_ignore) are left as they
// are: other users of the namespace may rely on them.
func Cleanup(ctx context.Context, vmi *api.VMI, netnsPath string, store *cache.Store, opts Options) (err error) {
	opts.fill()
	pairs, err := pairsOf(vmi, opts)
	if err != nil {
		return err
	}
	locks, err := takeLocks(ctx, vmi, netnsPath, store, opts)
	if err != nil {
		return err
	}
	defer locks.unlock(&err)
	if err := locks.checkNamespace(); err != nil {
		return err
	}
	if _, err := locks.recs.RemoveTemps(); err != nil {
		return &Error{Step: StepRead, Err: err}
	}
	d, closeFn, err := driverFor(netnsPath, opts)
	if err != nil {
		return err
	}
	defer closeFn()
	if err := cleanupPairs(ctx, d, vmi, pairs, locks.recs, opts, func(int) bool { return true }); err != nil {
		return err
	}
	if err := locks.recs.Remove(); err != nil {
		return &Error{Step: StepCleanup, Err: err}
	}
	return nil
}

// cleanupPairs undoes phase1 for pairs, last first; resumed(i) tells
// whether pair i's records existed before the run (see
// [binding.Input.Resumed]).
func cleanupPairs(ctx context.Context, d netdriver.Driver, vmi *api.VMI, pairs []api.Pair, recs *cache.Dir, opts Options, resumed func(int) bool) error {
	var errs []error
	for i, p := range slices.Backward(pairs) {
		if step, err := cleanupPair(ctx, d, vmi, p, recs, opts, resumed(i)); err != nil {
			errs = append(errs, &Error{Interface: p.Interface.Name, Step: step, Err: err})
		}
	}
	return errors.Join(errs...)
}

// cleanupPair undoes phase1 for one pair; a failure comes with its step.
func cleanupPair(ctx context.Context, d netdriver.Driver, vmi *api.VMI, p api.Pair, recs *cache.Dir, opts Options, resumed bool) (string, error) {
	name := p.Interface.Name
	pod, err := recs.ReadProgress(name)
	if errors.Is(err, cache.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return StepRead, err
	}
	rec, err := recs.ReadInterface(name)
	if err != nil && !errors.Is(err, cache.ErrNotExist) {
		return StepRead, err
	}
	b, err := opts.Registry.Lookup(pod.Binding)
	if err != nil {
		return StepCleanup, err
	}
	// Undo what was done, under the names it was done with: the pod
	// interface comes from the record, since ordinal names move when
	// spec.networks is reordered.
	p.PodInterface = pod.PodInterface
	in := InputFor(vmi, p, opts)
	keepRecordedNames(&in, rec)
	in.Resumed = resumed
	if err := b.Cleanup(ctx, d, in, pod.Discovered, rec); err != nil {
		return StepCleanup, err
	}
	return StepCleanup, recs.Delete(name)
}
