package deviceplugin

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/macvtap"
)

func TestInventory(t *testing.T) {
	inv, err := NewInventory([]Resource{
		{Name: "eth0", LowerDevice: "eth0", Mode: macvtap.ModeBridge, Capacity: 2},
		{Name: "dataplane", LowerDevice: "eno1", Mode: macvtap.ModeVEPA, Capacity: 1},
	})
	require.NoError(t, err)
	require.Equal(t, []string{"dataplane", "eth0"}, []string{inv.Resources()[0].Name, inv.Resources()[1].Name})

	ids, err := inv.DeviceIDs("eth0")
	require.NoError(t, err)
	require.Equal(t, []string{"eth0Mvp0", "eth0Mvp1"}, ids)

	s0, err := inv.Acquire("eth0")
	require.NoError(t, err)
	require.Equal(t, Slot{Resource: "eth0", Index: 0, DeviceID: "eth0Mvp0", HostLink: macvtap.HostLinkName("eth0Mvp0"),
		LowerDevice: "eth0", Mode: macvtap.ModeBridge}, s0)
	s1, err := inv.Acquire("eth0")
	require.NoError(t, err)
	require.Equal(t, 1, s1.Index)
	_, err = inv.Acquire("eth0")
	require.ErrorIs(t, err, ErrExhausted)
	require.EqualError(t, err, `macvtap resource "eth0": no free device slot: all 2 in use`)

	require.NoError(t, inv.Release("eth0", "eth0Mvp0"))
	free, err := inv.Free("eth0")
	require.NoError(t, err)
	require.Equal(t, 1, free)
	again, err := inv.Acquire("eth0")
	require.NoError(t, err)
	require.Equal(t, "eth0Mvp0", again.DeviceID, "lowest free slot first")

	peek, err := inv.Slot("dataplane", "dataplaneMvp0")
	require.NoError(t, err)
	require.Equal(t, "dataplaneMvp0", peek.DeviceID)
	_, err = inv.Slot("dataplane", "dataplaneMvp1")
	require.ErrorIs(t, err, ErrUnknownDevice)
	d, err := inv.Claim("dataplane", "dataplaneMvp0")
	require.NoError(t, err)
	require.Equal(t, macvtap.ModeVEPA, d.Mode)

	errs := []struct {
		name     string
		do       func() error
		sentinel error
	}{
		{"claim twice", func() error { _, err := inv.Claim("dataplane", "dataplaneMvp0"); return err }, ErrInUse},
		{"claim beyond capacity", func() error { _, err := inv.Claim("dataplane", "dataplaneMvp1"); return err }, ErrUnknownDevice},
		{"claim foreign id", func() error { _, err := inv.Claim("dataplane", "eth0Mvp0"); return err }, ErrUnknownDevice},
		{"claim padded id", func() error { _, err := inv.Claim("eth0", "eth0Mvp01"); return err }, ErrUnknownDevice},
		{"claim negative id", func() error { _, err := inv.Claim("eth0", "eth0Mvp-1"); return err }, ErrUnknownDevice},
		{"release free slot", func() error {
			require.NoError(t, inv.Release("eth0", "eth0Mvp1"))
			return inv.Release("eth0", "eth0Mvp1")
		}, ErrNotInUse},
		{"unknown resource acquire", func() error { _, err := inv.Acquire("eth9"); return err }, ErrUnknownResource},
		{"unknown resource release", func() error { return inv.Release("eth9", "eth9Mvp0") }, ErrUnknownResource},
		{"unknown resource free", func() error { _, err := inv.Free("eth9"); return err }, ErrUnknownResource},
		{"unknown resource ids", func() error { _, err := inv.DeviceIDs("eth9"); return err }, ErrUnknownResource},
	}
	for _, tc := range errs {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			require.ErrorIs(t, err, tc.sentinel)
			require.ErrorContains(t, err, "macvtap resource", "the error names the resource")
		})
	}
}

func TestNewInventoryRejects(t *testing.T) {
	_, err := NewInventory([]Resource{{Name: "a", Capacity: 0}})
	require.ErrorIs(t, err, ErrCapacity)
	_, err = NewInventory([]Resource{{Name: "a", Capacity: 1}, {Name: "a", Capacity: 1}})
	require.ErrorIs(t, err, ErrDuplicateName)
}

// TestInventoryConcurrent hammers one resource from many goroutines (run it
// with -race): the number of slots held never exceeds the capacity, and
// every slot comes back.
func TestInventoryConcurrent(t *testing.T) {
	const capacity, workers, rounds = 7, 16, 200
	inv, err := NewInventory([]Resource{{Name: "eth0", LowerDevice: "eth0", Mode: macvtap.ModeBridge, Capacity: capacity}})
	require.NoError(t, err)

	var (
		mu      sync.Mutex
		held    = map[string]bool{}
		maxHeld int
		wg      sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for range rounds {
				s, err := inv.Acquire("eth0")
				if err != nil {
					assert.ErrorIs(t, err, ErrExhausted)
					continue
				}
				mu.Lock()
				assert.False(t, held[s.DeviceID], "slot %s handed out twice", s.DeviceID)
				held[s.DeviceID] = true
				maxHeld = max(maxHeld, len(held))
				mu.Unlock()

				mu.Lock()
				delete(held, s.DeviceID)
				mu.Unlock()
				assert.NoError(t, inv.Release("eth0", s.DeviceID))
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, maxHeld, capacity)
	free, err := inv.Free("eth0")
	require.NoError(t, err)
	require.Equal(t, capacity, free)
}
