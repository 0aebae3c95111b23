package prestart_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/phase2/cloudinit"
	"github.com/virtnet/virtnet/phase2/prestart"
)

// TestHostileMounts: a FIFO where the hook reads a file (the cloud-init
// secret key, a sysprep file, a PVC's disk image) ends the hook at once
// with a StepError naming the step, wrapping ErrNotRegular, and leaves
// the files as they were. Before, the launcher blocked in open(2)
// forever. The run is guarded: a hang fails the test after a minute.
func TestHostileMounts(t *testing.T) {
	tests := []struct {
		name  string
		step  string
		setup func(t *testing.T, e *env)
	}{
		{"FIFO as the cloud-init secret key", "cloud-init", func(t *testing.T, e *env) {
			e.hook.SecretDir = filepath.Join(e.root, "secrets")
			dir := filepath.Join(e.hook.SecretDir, "cloudinit")
			require.NoError(t, os.MkdirAll(dir, 0o755))
			require.NoError(t, unix.Mkfifo(filepath.Join(dir, "userdata"), 0o644))
			e.vmi.Spec.Volumes[2].CloudInitNoCloud = &api.CloudInitSource{UserDataSecretRef: &api.LocalObjectReference{Name: "ci"}}
		}},
		{"FIFO in the sysprep directory", "cloud-init", func(t *testing.T, e *env) {
			require.NoError(t, unix.Mkfifo(filepath.Join(e.root, "sysprep", "unattend", "setup.ps1"), 0o644))
		}},
		{"FIFO as the PVC's disk image", "storage", func(t *testing.T, e *env) {
			img := filepath.Join(e.hook.Dirs.PrivateDir, "vmi-disks", "data", "disk.img")
			require.NoError(t, os.Remove(img))
			require.NoError(t, unix.Mkfifo(img, 0o644))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, vmiYAML)
			tc.setup(t, e)
			before := tree(t, e.root)
			done := make(chan error, 1)
			go func() {
				_, err := e.hook.Run(context.Background())
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				t.Fatal("the hook is still blocked after a minute")
			}
			var se *prestart.StepError
			require.ErrorAs(t, err, &se)
			require.Equal(t, tc.step, se.Step)
			require.ErrorIs(t, err, cloudinit.ErrNotRegular)
			require.ErrorContains(t, err, "named pipe")
			require.Equal(t, before, tree(t, e.root), "nothing left behind")
		})
	}
}

// TestCanceledDuringSteps: a context cancelled while a step runs ends the
// hook with the context's error, naming the step.
func TestCanceledDuringSteps(t *testing.T) {
	for _, step := range []string{"storage", "network", "cloud-init"} {
		t.Run(step, func(t *testing.T) {
			e := newEnv(t, vmiYAML)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var steps []prestart.Step
			for _, s := range e.hook.Steps {
				if s.Name() == step {
					s = cancelFirst{s, cancel}
				}
				steps = append(steps, s)
			}
			e.hook.Steps = steps
			_, err := e.hook.Run(ctx)
			var se *prestart.StepError
			require.ErrorAs(t, err, &se)
			require.Equal(t, step, se.Step)
			require.ErrorIs(t, err, context.Canceled)
		})
	}
}

// cancelFirst cancels the hook's context, then runs its step.
type cancelFirst struct {
	prestart.Step
	cancel context.CancelFunc
}

func (c cancelFirst) Run(ctx context.Context, st *prestart.State) error {
	c.cancel()
	return c.Step.Run(ctx, st)
}
