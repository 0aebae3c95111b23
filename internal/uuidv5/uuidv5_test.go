package uuidv5

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestSHA1MatchesGoogleUUID checks the UUIDs against
// github.com/google/uuid's NewSHA1, which api and domxml used before.
func TestSHA1MatchesGoogleUUID(t *testing.T) {
	for _, tc := range []struct{ ns, name string }{
		{"6a1a24a1-4061-4607-8bf4-a3963d0c5895", "testvm"},
		{"6a1a24a1-4061-4607-8bf4-a3963d0c5895", ""},
		{"df80d55b-855c-5311-b7ce-dba48016db35", "5b7e1c1e-e2e0-4a1b-9c55-000000000007"},
		{"DF80D55B-855C-5311-B7CE-DBA48016DB35", "default/vmi"},
		{uuid.NameSpaceURL.String(), "virtnet.domain"},
	} {
		require.Equal(t, uuid.NewSHA1(uuid.MustParse(tc.ns), []byte(tc.name)).String(), SHA1(tc.ns, tc.name), "%s %q", tc.ns, tc.name)
	}
	require.Equal(t, "df80d55b-855c-5311-b7ce-dba48016db35", SHA1(uuid.NameSpaceURL.String(), "virtnet.domain"), "domxml.UUIDNamespace")
	for _, bad := range []string{"", "6a1a24a1406146078bf4a3963d0c5895", "6a1a24a1-4061-4607-8bf4-a3963d0c589z"} {
		require.Panics(t, func() { SHA1(bad, "x") }, "%q", bad)
	}
}
