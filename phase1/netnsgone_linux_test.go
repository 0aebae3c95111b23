package phase1_test

import (
	"context"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// TestMissingNamespacePermanent: a namespace path that does not exist
// (the launcher's process gone, a bind mount removed) fails Run and
// Cleanup at once with a permanent error naming the path, so that an
// agent does not retry it for ever; it still matches fs.ErrNotExist.
func TestMissingNamespacePermanent(t *testing.T) {
	vmi := testutil.LoadVMI(t, bridgeVMI)
	path := filepath.Join(t.TempDir(), "gone", "ns", "net")
	s := testutil.NewStore(t)
	for name, err := range map[string]error{
		"Run":     phase1.Run(context.Background(), vmi, path, s, phase1.Options{}),
		"Cleanup": phase1.Cleanup(context.Background(), vmi, path, s, phase1.Options{}),
	} {
		require.ErrorIs(t, err, phase1.ErrNotNamespace, name)
		require.ErrorIs(t, err, fs.ErrNotExist, name)
		require.True(t, phase1.IsPermanent(err), "%s: %v", name, err)
		require.Contains(t, err.Error(), path)
		require.Contains(t, err.Error(), "missing")
	}
}
