package deviceplugin

import (
	"strconv"
	"strings"
	"sync"

	"github.com/virtnet/virtnet/macvtap"
)

// Slot is one macvtap device slot handed out by an [Inventory].
type Slot struct {
	// Resource is the resource's short name ("eth0").
	Resource string
	// Index is the slot number, 0 to capacity-1.
	Index int
	// DeviceID is the device-plugin ID, "<resource>Mvp<index>"; Multus
	// passes it to the CNI plugin as deviceID.
	DeviceID string
	// HostLink is the name of the macvtap link to create on the host for
	// this slot ([macvtap.HostLinkName] of DeviceID).
	HostLink string
	// LowerDevice and Mode are copied from the resource.
	LowerDevice string
	Mode        macvtap.Mode
}

// Inventory tracks which device slots of which resource are in use. It never
// hands out more slots than a resource's capacity. It is safe for concurrent
// use; the zero value is not usable, call [NewInventory].
type Inventory struct {
	mu    sync.Mutex
	pools map[string]*pool
}

type pool struct {
	res  Resource
	used []bool
	free int
}

// NewInventory makes an inventory with every slot of every resource free.
// The resources must be valid (as [ParseConfig] and [Discover] return them);
// duplicate names and capacities outside 1..MaxCapacity are refused.
func NewInventory(resources []Resource) (*Inventory, error) {
	inv := &Inventory{pools: make(map[string]*pool, len(resources))}
	for i, r := range resources {
		if r.Capacity < 1 || r.Capacity > MaxCapacity {
			return nil, &ConfigError{Index: i, Field: "capacity", Value: strconv.Itoa(r.Capacity), Err: ErrCapacity}
		}
		if _, dup := inv.pools[r.Name]; dup || r.Name == "" {
			return nil, &ConfigError{Index: i, Field: "name", Value: r.Name, Err: ErrDuplicateName}
		}
		inv.pools[r.Name] = &pool{res: r, used: make([]bool, r.Capacity), free: r.Capacity}
	}
	return inv, nil
}

// DeviceIDs returns the IDs of every slot of resource, in slot order: what a
// device plugin advertises in ListAndWatch.
func (inv *Inventory) DeviceIDs(resource string) ([]string, error) {
	p, ok := inv.pools[resource]
	if !ok {
		return nil, inventoryError(resource, "", ErrUnknownResource)
	}
	out := make([]string, p.res.Capacity)
	for i := range out {
		out[i] = macvtap.DeviceID(resource, i)
	}
	return out, nil
}

// Claim marks the slot with deviceID as in use: the kubelet picks device IDs
// itself and names them in Allocate.
func (inv *Inventory) Claim(resource, deviceID string) (Slot, error) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	p, i, err := inv.lookup(resource, deviceID)
	if err != nil {
		return Slot{}, err
	}
	if p.used[i] {
		return Slot{}, inventoryError(resource, deviceID, ErrInUse)
	}
	p.used[i] = true
	p.free--
	return p.slot(i), nil
}

// Slot returns the slot with deviceID, in use or not, without changing it.
func (inv *Inventory) Slot(resource, deviceID string) (Slot, error) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	p, i, err := inv.lookup(resource, deviceID)
	if err != nil {
		return Slot{}, err
	}
	return p.slot(i), nil
}

// Release returns the slot with deviceID to its resource.
func (inv *Inventory) Release(resource, deviceID string) error {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	p, i, err := inv.lookup(resource, deviceID)
	if err != nil {
		return err
	}
	if !p.used[i] {
		return inventoryError(resource, deviceID, ErrNotInUse)
	}
	p.used[i] = false
	p.free++
	return nil
}

// Free returns how many slots of resource are free.
func (inv *Inventory) Free(resource string) (int, error) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	p, ok := inv.pools[resource]
	if !ok {
		return 0, inventoryError(resource, "", ErrUnknownResource)
	}
	return p.free, nil
}

// lookup parses "<resource>Mvp<index>"; the caller holds inv.mu.
func (inv *Inventory) lookup(resource, deviceID string) (*pool, int, error) {
	p, ok := inv.pools[resource]
	if !ok {
		return nil, 0, inventoryError(resource, deviceID, ErrUnknownResource)
	}
	digits, ok := strings.CutPrefix(deviceID, resource+"Mvp")
	i, err := strconv.Atoi(digits)
	if !ok || err != nil || i < 0 || i >= p.res.Capacity || macvtap.DeviceID(resource, i) != deviceID {
		return nil, 0, inventoryError(resource, deviceID, ErrUnknownDevice)
	}
	return p, i, nil
}

func (p *pool) slot(i int) Slot {
	id := macvtap.DeviceID(p.res.Name, i)
	return Slot{
		Resource:    p.res.Name,
		Index:       i,
		DeviceID:    id,
		HostLink:    macvtap.HostLinkName(id),
		LowerDevice: p.res.LowerDevice,
		Mode:        p.res.Mode,
	}
}
