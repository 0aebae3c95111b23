package api

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDecodeEveryTypeErrorAtOnce: mistyped fields come back in one error,
// each by its path, with the unknown fields of the same manifest (the
// decoder alone stops at the first).
func TestDecodeEveryTypeErrorAtOnce(t *testing.T) {
	const manifest = `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: vm, namespace: default}
spec:
  domain:
    devices:
      interfaces:
      - name: default
        masquerade: []
        ports: [{port: "http"}, {port: 80.5}]
        macAddress: 5
        bogus: 1
  networks:
  - name: default
    pod: "yes"
`
	_, err := Decode([]byte(manifest))
	require.Error(t, err)
	got := map[string]string{}
	for _, fe := range FieldErrors(err) {
		got[fe.Path] = fe.Reason
	}
	require.Equal(t, map[string]string{
		"spec.domain.devices.interfaces[0].masquerade":    "wrong type: want an object, got a list",
		"spec.domain.devices.interfaces[0].ports[0].port": "wrong type: want an integer (32-bit), got a string",
		"spec.domain.devices.interfaces[0].ports[1].port": "wrong type: want an integer (32-bit), got the number 80.5",
		"spec.domain.devices.interfaces[0].macAddress":    "wrong type: want a string, got a number",
		"spec.domain.devices.interfaces[0].bogus":         "unknown field (in neither KubeVirt's schema, v0.53.2 or v1.9.0, nor what virtnet reads)",
		"spec.networks[0].pod":                            "wrong type: want an object, got a string",
	}, got)
}

// TestVirtualMachineErrorPaths: a VirtualMachine's errors, from decoding
// and from validation, name paths of the VirtualMachine's file.
func TestVirtualMachineErrorPaths(t *testing.T) {
	tests := []struct {
		name     string
		manifest string
		want     []string
	}{
		{
			name: "validation",
			manifest: `
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: vm}
spec:
  template:
    spec:
      domain:
        devices:
          interfaces:
          - {name: default, masquerade: {}, macAddress: "zz"}
      networks:
      - {name: other, pod: {}}
`,
			want: []string{
				"spec.template.spec.domain.devices.interfaces[0].macAddress",
				"spec.template.spec.domain.devices.interfaces[0].name",
			},
		},
		{
			name: "types",
			manifest: `
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: vm}
spec:
  template:
    spec:
      domain:
        devices:
          interfaces:
          - {name: default, masquerade: {}, ports: [{port: "22"}]}
      networks:
      - {name: default, pod: {}}
`,
			want: []string{"spec.template.spec.domain.devices.interfaces[0].ports[0].port"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load([]byte(tt.manifest))
			require.Error(t, err)
			var paths []string
			for _, fe := range FieldErrors(err) {
				paths = append(paths, fe.Path)
			}
			require.Subset(t, paths, tt.want)
			for _, p := range paths {
				require.NotRegexp(t, `^spec\.(domain|networks)`, p)
			}
		})
	}
}

// TestLoadEveryFieldErrorInOnePass: a manifest with a mistyped field, an
// unknown one and a value validation refuses gets all three in one
// error; a validation error that only repeats a mistyped field (the
// interface left without a binding because its binding was mistyped) is
// not added.
func TestLoadEveryFieldErrorInOnePass(t *testing.T) {
	const manifest = `
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: vm}
spec:
  template:
    spec:
      domain:
        devices:
          interfaces:
          - {name: default, masquerade: [], colour: blue}
          - {name: blue, bridge: {}, macAddress: "zz"}
      networks:
      - {name: default, pod: {}}
      - {name: blue, multus: {networkName: blue-net}}
`
	_, err := Load([]byte(manifest))
	require.Error(t, err)
	var paths []string
	for _, fe := range FieldErrors(err) {
		paths = append(paths, fe.Path)
	}
	require.ElementsMatch(t, []string{
		"spec.template.spec.domain.devices.interfaces[0].masquerade",
		"spec.template.spec.domain.devices.interfaces[0].colour",
		"spec.template.spec.domain.devices.interfaces[1].macAddress",
	}, paths)
}
