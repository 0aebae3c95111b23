package api_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
)

// TestLoadDerivesUID: a manifest without metadata.uid (one fresh from a
// repository) comes out of Load with api.DerivedUID of its namespace and
// name, the same on every load, so that phase1 (which refuses a VMI
// without a uid) and the launcher agree; a uid the manifest (or its
// VirtualMachine) gives is kept.
func TestLoadDerivesUID(t *testing.T) {
	const spec = `
spec:
  domain:
    devices: {}
`
	tests := []struct {
		name, manifest, want string
	}{
		{"no uid, no namespace", "kind: VirtualMachineInstance\napiVersion: kubevirt.io/v1\nmetadata: {name: vm}" + spec,
			api.DerivedUID("default", "vm")},
		{"no uid", "kind: VirtualMachineInstance\napiVersion: kubevirt.io/v1\nmetadata: {name: vm, namespace: ns1}" + spec,
			api.DerivedUID("ns1", "vm")},
		{"uid kept", "kind: VirtualMachineInstance\napiVersion: kubevirt.io/v1\nmetadata: {name: vm, uid: 3f1c2a9e-0000-4000-8000-000000000001}" + spec,
			"3f1c2a9e-0000-4000-8000-000000000001"},
		{"VirtualMachine's uid", "kind: VirtualMachine\napiVersion: kubevirt.io/v1\nmetadata: {name: vm, uid: 3f1c2a9e-0000-4000-8000-000000000002}\nspec:\n  template:\n    spec:\n      domain:\n        devices: {}\n",
			"3f1c2a9e-0000-4000-8000-000000000002"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vmi, err := api.Load([]byte(tc.manifest))
			require.NoError(t, err)
			require.Equal(t, tc.want, vmi.Metadata.UID)
			again, err := api.Load([]byte(tc.manifest))
			require.NoError(t, err)
			require.Equal(t, vmi.Metadata.UID, again.Metadata.UID, "the same uid on every load")
		})
	}
	// The derivation is fixed: a cache written by an earlier release
	// (virtnet-xml's and the example launcher's FillUID) stays valid.
	require.Equal(t, "df80d55b-855c-5311-b7ce-dba48016db35", api.UIDNamespace)
	require.Equal(t, "73a0bf5f-d4ee-5cb4-af4a-a79c8fcdedd8", api.DerivedUID("default", "vm"))
}

// TestValidateMarksTheVMI: Load and a passing Validate mark the VMI
// validated (what phase1 takes without validating again); Decode, a
// failing Validate and a UID that cannot name the records' directory do
// not.
func TestValidateMarksTheVMI(t *testing.T) {
	const manifest = "kind: VirtualMachineInstance\napiVersion: kubevirt.io/v1\nmetadata: {name: vm, uid: %s}\nspec:\n  domain:\n    devices: {}\n"
	vmi, err := api.Load(fmt.Appendf(nil, manifest, "u-1"))
	require.NoError(t, err)
	require.True(t, vmi.Validated())

	vmi, err = api.Decode(fmt.Appendf(nil, manifest, "u-1"))
	require.NoError(t, err)
	require.False(t, vmi.Validated())
	api.SetDefaults(vmi)
	require.NoError(t, api.Validate(vmi))
	require.True(t, vmi.Validated())
	vmi.Metadata.Name = "Not_A_Name"
	require.Error(t, api.Validate(vmi))
	require.False(t, vmi.Validated(), "a failing Validate takes the mark away")

	for _, uid := range []string{"../x", "a/b", ".hidden", "a\\\\b", strings.Repeat("u", 254)} {
		_, err := api.Load(fmt.Appendf(nil, manifest, strconv.Quote(uid)))
		fes := api.FieldErrors(err)
		require.Len(t, fes, 1, "uid %q: %v", uid, err)
		require.Equal(t, "metadata.uid", fes[0].Path)
	}
}
