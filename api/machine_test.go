package api_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
)

// TestDecodeKubeVirt: the two decoding modes (issue 22 item 1). A VMI
// KubeVirt serialised may carry fields newer than virtnet's schema: they
// are accepted and listed by path; a misspelt case and a duplicate key
// stay errors in both modes; the manifest edge refuses the unknown fields
// by path.
func TestDecodeKubeVirt(t *testing.T) {
	const newer = `{"kind":"VirtualMachineInstance","metadata":{"name":"n","uid":"u1"},
"spec":{"domain":{"futureKnob":{"on":true},"devices":{"interfaces":[{"name":"default","masquerade":{},"futureNICKnob":"x"}]}},
"networks":[{"name":"default","pod":{},"futureNetKnob":1}]},
"status":{"futureStatus":[1],"interfaces":[{"name":"default","futureIfaceStatus":"y"}]}}`
	vmi, err := api.LoadKubeVirt([]byte(newer))
	require.NoError(t, err)
	require.Equal(t, []string{"spec.domain.futureKnob", "spec.domain.devices.interfaces[0].futureNICKnob", "spec.networks[0].futureNetKnob"}, vmi.Unknown)
	require.Equal(t, api.BindingMasquerade, vmi.Spec.Domain.Devices.Interfaces[0].Binding())

	_, err = api.Load([]byte(newer))
	require.Error(t, err)
	for _, p := range vmi.Unknown {
		require.ErrorContains(t, err, p)
	}
	require.NotContains(t, err.Error(), "futureStatus", "status is KubeVirt's: not checked in either mode")

	for name, doc := range map[string]string{
		"case":      `{"metadata":{"name":"n"},"spec":{"domain":{"devices":{"interfaces":[{"name":"default","Masquerade":{}}]}},"networks":[{"name":"default","pod":{}}]}}`,
		"duplicate": `{"metadata":{"name":"n"},"spec":{"domain":{"devices":{"interfaces":[{"name":"default","masquerade":{},"masquerade":{}}]}},"networks":[{"name":"default","pod":{}}]}}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := api.DecodeKubeVirt([]byte(doc))
			require.ErrorContains(t, err, "spec.domain.devices.interfaces[0].")
			_, err = api.Decode([]byte(doc))
			require.ErrorContains(t, err, "spec.domain.devices.interfaces[0].")
		})
	}
}

// TestStatusRulesBothModes: status, which KubeVirt writes, follows one rule
// in both modes, the one the documentation states: a field nobody knows is
// accepted (and not listed in VMI.Unknown: status is not the spec), a key
// given twice is refused by its path (KubeVirt never sends one; the
// decoder would keep the last, and status.runtimeUser picks the taps'
// owner), and a field virtnet reads (runtimeUser, migrationTransport,
// interfaces) of the wrong type is refused by its path, like a spec field.
// Before, a mistyped read field came back as the JSON decoder's error
// without a path, and the documents said status was not checked at all.
func TestStatusRulesBothModes(t *testing.T) {
	const spec = `"kind":"VirtualMachineInstance","metadata":{"name":"n"},"spec":{"domain":{"devices":{}}}`
	decoders := map[string]func([]byte) (*api.VMI, error){"Decode": api.Decode, "DecodeKubeVirt": api.DecodeKubeVirt}
	for name, decode := range decoders {
		t.Run(name, func(t *testing.T) {
			vmi, err := decode([]byte(`{` + spec + `,"status":{"futureStatus":{"a":[1,{"b":2}]},"runtimeUser":107,"interfaces":[{"name":"default","futureField":1}]}}`))
			require.NoError(t, err)
			require.Empty(t, vmi.Unknown)
			require.EqualValues(t, 107, vmi.Status.RuntimeUser)

			for doc, path := range map[string]string{
				`"status":{"runtimeUser":0,"runtimeUser":107}`:               "status.runtimeUser",
				`"status":{"futureStatus":{"a":1,"a":2}}`:                    "status.futureStatus.a",
				`"status":{"interfaces":[{"name":"a","mac":"x","mac":"y"}]}`: "status.interfaces[0].mac",
				`"status":{"runtimeUser":"107"}`:                             "status.runtimeUser",
				`"status":{"runtimeUser":-1}`:                                "status.runtimeUser",
				`"status":{"migrationTransport":1}`:                          "status.migrationTransport",
				`"status":{"interfaces":{"name":"a"}}`:                       "status.interfaces",
				`"status":{"interfaces":[{"name":"a","queueCount":"1"}]}`:    "status.interfaces[0].queueCount",
			} {
				_, err := decode([]byte(`{` + spec + `,` + doc + `}`))
				require.Error(t, err, doc)
				fes := api.FieldErrors(err)
				require.Len(t, fes, 1, "%s: %v", doc, err)
				require.Equal(t, path, fes[0].Path, doc)
			}
		})
	}
}
