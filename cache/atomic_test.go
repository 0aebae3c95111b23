package cache

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

const testUID = "0b1c0d9e-0000-4000-8000-000000000001"

func testStore(t *testing.T) *Store {
	t.Helper()
	s, err := New(filepath.Join(t.TempDir(), "cache"))
	require.NoError(t, err)
	return s
}

func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestCrashBeforeRename stops a write between writing the temporary file
// and renaming it into place: readers, during and after, see the old
// record, and no temporary file is left behind or ever readable as a
// record.
func TestCrashBeforeRename(t *testing.T) {
	tests := []struct {
		name string
		// crash runs in place of the rename; it may leave the temporary
		// file behind as a real crash would (by hard-linking it).
		crash    func(t *testing.T, tmp string) error
		leftover bool
	}{
		{
			name:  "write fails before rename",
			crash: func(t *testing.T, tmp string) error { return errors.New("simulated crash") },
		},
		{
			name: "process dies before rename, temporary file left",
			crash: func(t *testing.T, tmp string) error {
				require.NoError(t, os.Link(tmp, tmp+"-orphan"))
				return errors.New("simulated crash")
			},
			leftover: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testStore(t)
			old := &Interface{Interface: "default", Binding: "bridge", MAC: MustParseMAC("02:00:00:00:00:01"), MTU: 1500}
			require.NoError(t, s.WriteInterface(testUID, old))
			path, err := s.InterfacePath(testUID, "default")
			require.NoError(t, err)
			oldBytes, err := os.ReadFile(path)
			require.NoError(t, err)

			var hookRan bool
			s.beforeRename = func(tmp string) error {
				hookRan = true
				require.Equal(t, filepath.Dir(path), filepath.Dir(tmp), "the temporary file is beside the record")
				require.True(t, strings.HasPrefix(filepath.Base(tmp), "."), "the temporary file is hidden: %s", tmp)
				require.Error(t, CheckName("interface", filepath.Base(tmp)), "no record name can reach it")
				fi, err := os.Stat(tmp)
				require.NoError(t, err)
				require.Equal(t, FileMode, fi.Mode().Perm(), "complete before rename")
				// A reader now sees the old record.
				got, err := s.ReadInterface(testUID, "default")
				require.NoError(t, err)
				require.Equal(t, 1500, got.MTU)
				return tt.crash(t, tmp)
			}
			err = s.WriteInterface(testUID, &Interface{Interface: "default", Binding: "bridge", MAC: MustParseMAC("02:00:00:00:00:02"), MTU: 9000})
			require.ErrorContains(t, err, "simulated crash")
			require.ErrorContains(t, err, path)
			require.True(t, hookRan)

			now, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, string(oldBytes), string(now), "the old file is intact")
			got, err := s.ReadInterface(testUID, "default")
			require.NoError(t, err)
			require.Equal(t, 1500, got.MTU)

			left := tempFiles(t, filepath.Dir(path))
			if tt.leftover {
				require.Len(t, left, 1)
			} else {
				require.Empty(t, left, "the temporary file is removed")
			}

			// The next write succeeds despite any orphan.
			s.beforeRename = nil
			require.NoError(t, s.WriteInterface(testUID, &Interface{Interface: "default", MTU: 9000}))
			got, err = s.ReadInterface(testUID, "default")
			require.NoError(t, err)
			require.Equal(t, 9000, got.MTU)
		})
	}
}

// record is writer w's i-th record; every field is derived from (w, i) so
// that a reader can check a record is whole.
func record(w, i int) *Interface {
	return &Interface{
		Interface:    "default",
		PodInterface: "eth0",
		Binding:      "bridge",
		Bridge:       fmt.Sprintf("br-%d-%d", w, i),
		Tap:          fmt.Sprintf("tap-%d-%d", w, i),
		MAC:          MustParseMAC(fmt.Sprintf("02:00:00:00:%02x:%02x", w, i%256)),
		MTU:          1000 + w,
		Queues:       i,
		IPv4:         netip.MustParsePrefix(fmt.Sprintf("10.%d.%d.2/24", w, i%256)),
		Routes:       make([]Route, i%7),
		// A record size that varies, so that a torn file could not
		// pass for a whole one.
		Target: strings.Repeat("x", (w*31+i)%97),
	}
}

func wholeRecord(r *Interface) error {
	var w, i int
	if _, err := fmt.Sscanf(r.Bridge, "br-%d-%d", &w, &i); err != nil {
		return fmt.Errorf("bridge %q: %w", r.Bridge, err)
	}
	want := record(w, i)
	want.Version = Version
	if fmt.Sprint(want) != fmt.Sprint(r) {
		return fmt.Errorf("torn record:\n got %+v\nwant %+v", r, want)
	}
	return nil
}

// TestConcurrentWriters has writers replace the same record while readers
// read it: no reader may see a torn or invalid file.
func TestConcurrentWriters(t *testing.T) {
	const writers = 8
	perWriter := 200
	if testing.Short() {
		perWriter = 25
	}
	s := testStore(t)
	var wg, readers sync.WaitGroup
	var done atomic.Bool
	var reads, notYet atomic.Int64
	errs := make(chan error, 64)
	for r := 0; r < 4; r++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for !done.Load() {
				rec, err := s.ReadInterface(testUID, "default")
				if errors.Is(err, ErrNotExist) {
					notYet.Add(1)
					continue
				}
				if err == nil {
					err = wholeRecord(rec)
				}
				if err != nil {
					errs <- err
					return
				}
				reads.Add(1)
			}
		}()
	}
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				if err := s.WriteInterface(testUID, record(w, i)); err != nil {
					errs <- fmt.Errorf("writer %d write %d: %w", w, i, err)
					return
				}
				// Now and then, a second record kind in the same directory.
				if i%20 != 0 && i != perWriter-1 {
					continue
				}
				if err := s.WriteProgress(testUID, &Progress{Interface: fmt.Sprintf("w%d", w), State: State(i % 3)}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	done.Store(true)
	readers.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	t.Logf("%d whole reads, %d before the first write", reads.Load(), notYet.Load())

	rec, err := s.ReadInterface(testUID, "default")
	require.NoError(t, err)
	require.NoError(t, wholeRecord(rec))
	for w := 0; w < writers; w++ {
		pi, err := s.ReadProgress(testUID, fmt.Sprintf("w%d", w))
		require.NoError(t, err)
		require.Equal(t, State((perWriter-1)%3), pi.State)
	}
	path, err := s.InterfacePath(testUID, "default")
	require.NoError(t, err)
	require.Empty(t, tempFiles(t, filepath.Dir(path)), "no temporary file is left")
}
