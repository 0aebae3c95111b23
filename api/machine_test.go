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
