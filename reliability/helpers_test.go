//go:build linux

package reliability_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
)

const uid = "7a1b2c3d-4e5f-4a6b-8c7d-0e1f2a3b4c5d"

const bridgeVMI = `
kind: VirtualMachineInstance
metadata: {name: vmi-bridge, namespace: default, uid: ` + uid + `}
spec:
  domain: {devices: {interfaces: [{name: default, bridge: {}}]}}
  networks: [{name: default, pod: {}}]
`

const masqueradeVMI = `
kind: VirtualMachineInstance
metadata: {name: vmi-masq, namespace: default, uid: ` + uid + `}
spec:
  domain:
    devices:
      interfaces:
      - {name: default, masquerade: {}, ports: [{name: http, port: 80}, {port: 53, protocol: UDP}]}
  networks: [{name: default, pod: {}}]
`

func loadVMI(tb testing.TB, yaml string) *api.VMI {
	tb.Helper()
	vmi, err := api.Load([]byte(yaml))
	require.NoError(tb, err)
	return vmi
}

func newStore(tb testing.TB) *cache.Store {
	tb.Helper()
	s, err := cache.New(filepath.Join(tb.TempDir(), "cache"))
	require.NoError(tb, err)
	return s
}

// cacheFiles returns every file under the store's root by relative path,
// after checking that each one parses as the record its name says: a
// torn or stray (temporary) file fails the test.
func cacheFiles(tb testing.TB, s *cache.Store) map[string]string {
	tb.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(s.Root(), func(p string, de os.DirEntry, err error) error {
		if os.IsNotExist(err) && p == s.Root() {
			return filepath.SkipDir
		}
		if err != nil || de.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		base := filepath.Base(p)
		if strings.HasPrefix(base, ".lock-") && filepath.Dir(p) == s.Root() {
			return nil // a VMI's lock file (empty), not a record
		}
		switch {
		case strings.HasPrefix(base, "pod-interface-"):
			err = cache.Decode(p, b, &cache.Progress{})
		case strings.HasPrefix(base, "interface-"):
			err = cache.Decode(p, b, &cache.Interface{})
		default:
			tb.Errorf("stray file in the cache: %s", p)
		}
		if err != nil {
			tb.Errorf("cache file %s does not parse: %v", p, err)
		}
		rel, _ := filepath.Rel(s.Root(), p)
		out[rel] = string(b)
		return nil
	})
	require.NoError(tb, err)
	return out
}

// loadYAMLWithUID replaces the test UID in a VMI manifest.
func loadYAMLWithUID(yaml, newUID string) string {
	return strings.ReplaceAll(yaml, uid, newUID)
}

// loadVMIErr is api.Load for goroutines other than the test's.
func loadVMIErr(yaml string) (*api.VMI, error) { return api.Load([]byte(yaml)) }
