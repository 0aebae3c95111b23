package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/testrig/testutil"
)

// TestKubeVirtExamples renders every KubeVirt example manifest kept in
// api/testdata/kubevirt through the simulated pod, and checks the result
// with libvirt's own schema; the one that uses a feature virtnet does not
// render (GPUs) must be refused by name.
func TestKubeVirtExamples(t *testing.T) {
	files, err := filepath.Glob("../../api/testdata/kubevirt/*.yaml")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 10)
	refused := map[string]string{"vmi-gpu.yaml": "spec.domain.devices.gpus"}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"-vmi", f}, &stdout, &stderr)
			if field, ok := refused[filepath.Base(f)]; ok {
				require.NotZero(t, code)
				require.Contains(t, stderr.String(), field)
				return
			}
			require.Zero(t, code, stderr.String())
			out := filepath.Join(t.TempDir(), "domain.xml")
			require.NoError(t, os.WriteFile(out, stdout.Bytes(), 0o644))
			testutil.ValidateDomain(t, out)
			require.NoError(t, testutil.DefineDomain(t, out))
		})
	}
}
