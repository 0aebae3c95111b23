package testutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
)

// LoadVMI decodes, defaults and validates a VMI manifest ([api.Load]),
// failing the test on error.
func LoadVMI(tb testing.TB, manifest string) *api.VMI {
	tb.Helper()
	vmi, err := api.Load([]byte(manifest))
	require.NoError(tb, err)
	return vmi
}

// LoadVMIFile is [LoadVMI] for the manifest at path.
func LoadVMIFile(tb testing.TB, path string) *api.VMI {
	tb.Helper()
	data, err := os.ReadFile(path)
	require.NoError(tb, err)
	return LoadVMI(tb, string(data))
}

// NewStore is a cache store whose root, not yet created, is under
// tb.TempDir(), as phase1 finds it on a fresh node.
func NewStore(tb testing.TB) *cache.Store {
	tb.Helper()
	s, err := cache.New(filepath.Join(tb.TempDir(), "cache"))
	require.NoError(tb, err)
	return s
}

// CacheFiles snapshots a store: every file under its root by relative
// path and content, after checking that each record parses as the record
// its name says (a torn record or a stray file, a leftover temporary file
// included, fails the test). A VMI's lock file (.lock-<uid>, empty) is
// listed too: drop the keys starting with ".lock-" to compare records
// alone. A VMI's namespace record (cache.NamespaceFile) is checked but not
// listed: it names the namespace, which differs between the pods of
// tests that compare caches. A root that does not exist is an empty
// snapshot.
func CacheFiles(tb testing.TB, s *cache.Store) map[string]string {
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
		rel, _ := filepath.Rel(s.Root(), p)
		base := filepath.Base(p)
		if base == cache.NamespaceFile && filepath.Dir(filepath.Dir(p)) == s.Root() {
			if err := cache.Decode(p, b, &cache.Namespace{}); err != nil {
				tb.Errorf("cache file %s does not parse: %v", p, err)
			}
			return nil
		}
		out[rel] = string(b)
		switch {
		case strings.HasPrefix(base, ".lock-") && filepath.Dir(p) == s.Root():
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
		return nil
	})
	require.NoError(tb, err)
	return out
}

// WriteRecord writes rec (a *cache.Interface or a *cache.Progress) for the
// VMI uid the way phase1 does (under the VMI's lock, Put, then Sync),
// failing the test on error.
func WriteRecord(tb testing.TB, s *cache.Store, uid string, rec any) {
	tb.Helper()
	d, err := s.OpenVMI(tb.Context(), uid)
	require.NoError(tb, err)
	defer func() { require.NoError(tb, d.Close()) }()
	switch r := rec.(type) {
	case *cache.Interface:
		_, err = d.PutInterface(r)
	case *cache.Progress:
		_, err = d.PutProgress(r)
	default:
		tb.Fatalf("testutil.WriteRecord: %T is not a cache record", rec)
	}
	require.NoError(tb, err)
	require.NoError(tb, d.Sync())
}
