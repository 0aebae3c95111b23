package phase2_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/phase2"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// TestNotReady: an interface record whose phase1 progress record is
// missing, pending or started (a crash mid-prepare) is refused, naming the
// interface and the state, so that no domain points at a missing bridge.
func TestNotReady(t *testing.T) {
	vmi := loadVMI(t, "bridge")
	uid := vmi.Metadata.UID
	for _, tc := range []struct {
		name  string
		state *cache.State
		want  string
	}{
		{"no progress record", nil, "does not exist"},
		{"started", ptr(cache.Started), `state "started"`},
		{"pending", ptr(cache.Pending), `state "pending"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, err := cache.New(t.TempDir())
			require.NoError(t, err)
			rec := sourceDocRecord
			testutil.WriteRecord(t, store, uid, &rec)
			if tc.state != nil {
				pod := finished(rec)
				pod.State = *tc.state
				testutil.WriteRecord(t, store, uid, pod)
			}
			_, err = phase2.Domain(context.Background(), vmi, store, phase2.Options{})
			var nr *phase2.NotReadyError
			require.ErrorAs(t, err, &nr)
			require.Equal(t, rec.Interface, nr.Interface)
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, `interface "`+rec.Interface+`"`)
		})
	}
}

func ptr[T any](v T) *T { return &v }
