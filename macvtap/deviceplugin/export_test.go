package deviceplugin

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// The device plugin server claims the slots the kubelet names (Claim);
// the tests also hand out and count slots directly.

// ErrExhausted: every slot of the resource is in use (acquire).
var ErrExhausted = errors.New("no free device slot")

// Resources returns the inventory's resources, sorted by name.
func (inv *Inventory) Resources() []Resource {
	var out []Resource
	for _, n := range slices.Sorted(maps.Keys(inv.pools)) {
		out = append(out, inv.pools[n].res) // res is never written after NewInventory
	}
	return out
}

// Acquire hands out the lowest free slot of resource, or fails with
// [ErrExhausted] when all of them are in use.
func (inv *Inventory) Acquire(resource string) (Slot, error) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	p, ok := inv.pools[resource]
	if !ok {
		return Slot{}, inventoryError(resource, "", ErrUnknownResource)
	}
	if p.free == 0 {
		return Slot{}, inventoryError(resource, "", fmt.Errorf("%w: all %d in use", ErrExhausted, p.res.Capacity))
	}
	i := slices.Index(p.used, false)
	p.used[i] = true
	p.free--
	return p.slot(i), nil
}
