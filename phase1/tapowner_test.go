package phase1_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// TestTapOwnerFor: the zero TapOwner is the VMI's choice, TapOwnerUID
// wins over it (root included), and a uid out of range is refused before
// anything is opened.
func TestTapOwnerFor(t *testing.T) {
	root := testutil.LoadVMI(t, bridgeVMI)
	nonRoot := testutil.LoadVMI(t, bridgeVMI)
	nonRoot.Status.RuntimeUser = 107
	for _, tc := range []struct {
		name  string
		owner phase1.TapOwner
		vmi   *api.VMI
		want  int
		str   string
	}{
		{name: "zero, root VMI", vmi: root, want: 0, str: "the VMI's"},
		{name: "zero, non-root VMI", vmi: nonRoot, want: api.QemuID, str: "the VMI's"},
		{name: "root on a non-root VMI", owner: phase1.TapOwnerUID(0), vmi: nonRoot, want: 0, str: "0"},
		{name: "uid on a root VMI", owner: phase1.TapOwnerUID(1000), vmi: root, want: 1000, str: "1000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.owner.For(tc.vmi))
			require.Equal(t, tc.str, tc.owner.String())
			pairs, err := api.Pairs(tc.vmi)
			require.NoError(t, err)
			require.Equal(t, tc.want, phase1.InputFor(tc.vmi, pairs[0], phase1.Options{TapOwner: tc.owner}).TapOwner)
		})
	}
	for _, bad := range []int{-1, 1 << 31} {
		err := phase1.Run(context.Background(), root, "/nonexistent", testutil.NewStore(t), phase1.Options{TapOwner: phase1.TapOwnerUID(bad)})
		var pe *phase1.Error
		require.ErrorAs(t, err, &pe)
		require.Equal(t, phase1.StepValidate, pe.Step)
		require.ErrorContains(t, err, "Options.TapOwner")
	}
}
