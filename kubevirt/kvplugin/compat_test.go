package kvplugin

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/cache"
)

var updateHandoff = flag.Bool("update", false, "write testdata/handoff records of the current RecordVersion")

// TestReadsPreviousRecordVersion: the hand-off records a CNI plugin of
// every version from MinRecordVersion on wrote (testdata/handoff, named
// v<version>-<binding>-<pod interface>.alias) decode in this build, and
// the previous version's are kept once RecordVersion is raised: during a
// node-by-node upgrade the new sidecar reads what an old CNI plugin left
// (an N-1 record), so no VM stops.
func TestReadsPreviousRecordVersion(t *testing.T) {
	if *updateHandoff {
		for _, rec := range []*cache.Interface{bridgeRec(), masqRec()} {
			s, err := Encode(rec)
			require.NoError(t, err)
			name := fmt.Sprintf("testdata/handoff/v%d-%s-%s.alias", RecordVersion, rec.Binding, rec.PodInterface)
			require.NoError(t, os.WriteFile(name, []byte(s+"\n"), 0o644))
		}
	}
	files, err := filepath.Glob("testdata/handoff/v*.alias")
	require.NoError(t, err)
	nameRE := regexp.MustCompile(`^v(\d+)-([a-z]+)-([a-z0-9]+)\.alias$`)
	versions := map[int]bool{}
	for _, f := range files {
		m := nameRE.FindStringSubmatch(filepath.Base(f))
		require.NotNil(t, m, "%s: name it v<version>-<binding>-<pod interface>.alias", f)
		v, _ := strconv.Atoi(m[1])
		versions[v] = true
		if v < MinRecordVersion {
			continue
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			rec, err := Decode(strings.TrimSuffix(string(b), "\n"), m[2], m[3], m[3] == "eth0")
			require.NoError(t, err)
			require.Equal(t, m[3], rec.PodInterface)
			require.NotEmpty(t, rec.MAC)
		})
	}
	require.True(t, versions[MinRecordVersion], "keep records of version %d (MinRecordVersion) in testdata/handoff", MinRecordVersion)
	require.True(t, versions[RecordVersion], "run with -update to add records of version %d", RecordVersion)
	require.LessOrEqual(t, MinRecordVersion, max(RecordVersion-1, 1), "read at least the previous version")
}
