package cache

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadsPreviousVersion: every record kept in testdata/records, written
// by a release of schema version MinReadVersion or later, still decodes,
// and the previous version's records are kept once Version is raised: a
// node whose CNI plugin is upgraded while a VMI runs can still undo what
// the older release prepared.
func TestReadsPreviousVersion(t *testing.T) {
	files, err := filepath.Glob("testdata/records/v*-*.json")
	require.NoError(t, err)
	nameRE := regexp.MustCompile(`^v(\d+)-(progress|interface)-?.*\.json$`)
	versions := map[int]bool{}
	for _, f := range files {
		m := nameRE.FindStringSubmatch(filepath.Base(f))
		require.NotNil(t, m, "%s: name it v<version>-<progress|interface>[-what].json", f)
		v, _ := strconv.Atoi(m[1])
		versions[v] = true
		if v < MinReadVersion {
			continue
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			var rec versioned = &Interface{}
			if m[2] == "progress" {
				rec = &Progress{}
			}
			require.NoError(t, Decode(f, b, rec))
			require.Equal(t, v, rec.version())
		})
	}
	require.True(t, versions[MinReadVersion], "keep records of version %d (MinReadVersion) in testdata/records", MinReadVersion)
	require.True(t, versions[Version], "add records of version %d (Version) to testdata/records", Version)
	require.LessOrEqual(t, MinReadVersion, max(Version-1, 1), "read at least the previous version")

	tooNew := []byte(`{"version": ` + strconv.Itoa(Version+1) + `}`)
	var ve *VersionError
	require.ErrorAs(t, Decode("new.json", tooNew, &Progress{}), &ve)
	require.Equal(t, Version+1, ve.Got)
}
