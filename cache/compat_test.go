package cache

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
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

// TestRecordsRewriteIdentically: the kept records decode into the typed
// fields and encode back to the same bytes, so that the typed values
// change nothing on disk.
func TestRecordsRewriteIdentically(t *testing.T) {
	files, err := filepath.Glob("testdata/records/v*-*.json")
	require.NoError(t, err)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			var rec versioned = &Interface{}
			if strings.Contains(f, "-progress") {
				rec = &Progress{}
			}
			require.NoError(t, Decode(f, b, rec))
			out, err := json.MarshalIndent(rec, "", "  ")
			require.NoError(t, err)
			require.Equal(t, string(bytes.TrimSpace(b)), string(out))
		})
	}
}

// TestDecodeNamesRefusedValue: a value its field's type refuses (an
// address, a prefix, a MAC) is a CorruptError naming the field by its
// JSON path and the value.
func TestDecodeNamesRefusedValue(t *testing.T) {
	tests := []struct {
		name, record, field, value string
		progress                   bool
	}{
		{"MAC", `{"version": 1, "mac": "zz"}`, "mac", "zz", false},
		{"EUI-64 MAC", `{"version": 1, "mac": "02:00:00:00:00:00:00:01"}`, "mac", "02:00:00:00:00:00:00:01", false},
		{"address without prefix", `{"version": 1, "ipv4": "10.0.0.1"}`, "ipv4", "10.0.0.1", false},
		{"gateway", `{"version": 1, "gateway": "router"}`, "gateway", "router", false},
		{"route", `{"version": 1, "routes": [{"dst": "0.0.0.0/0"}, {"dst": "default"}]}`, "routes[1].dst", "default", false},
		{"pod IP", `{"version": 1, "podIPs": ["10.0.0.1", "10.0.0.1/24"]}`, "podIPs[1]", "10.0.0.1/24", true},
		{"discovered route source", `{"version": 1, "discovered": {"routes": [{"dst": "0.0.0.0/0", "src": "x"}]}}`, "discovered.routes[0].src", "x", true},
		{"address flags key", `{"version": 1, "discovered": {"addressFlags": {"10.0.0.1": 2}}}`, "discovered.addressFlags", "10.0.0.1", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var rec versioned = &Interface{}
			if tc.progress {
				rec = &Progress{}
			}
			err := Decode("rec.json", []byte(tc.record), rec)
			var ce *CorruptError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, tc.field, ce.Field)
			require.Equal(t, tc.value, ce.Value)
			require.ErrorContains(t, err, "rec.json")
		})
	}
	t.Run("zero and all-zero MAC stay apart", func(t *testing.T) {
		var rec Interface
		require.NoError(t, Decode("rec.json", []byte(`{"version": 1, "mac": "00:00:00:00:00:00"}`), &rec))
		require.True(t, rec.MAC.IsValid())
		require.Equal(t, "00:00:00:00:00:00", rec.MAC.String())
		require.NoError(t, Decode("rec.json", []byte(`{"version": 1, "mac": ""}`), &rec))
		require.False(t, rec.MAC.IsValid())
		out, err := json.Marshal(&Interface{Version: 1})
		require.NoError(t, err)
		require.Equal(t, `{"version":1,"interface":"","podInterface":"","binding":""}`, string(out))
	})
}
