package api_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
)

// fixturePair is what one (interface, network) pair of a fixture must look
// like after Load.
type fixturePair struct {
	iface, binding, podIface string
}

// TestKubeVirtFixtures loads KubeVirt v0.53's own example manifests
// (testdata/kubevirt, see its README) and checks decoding, defaults and
// validation.
func TestKubeVirtFixtures(t *testing.T) {
	tests := []struct {
		file        string
		name        string
		pairs       []fixturePair
		unsupported []string
		// invalid lists the paths Validate must refuse, when the
		// manifest is outside what virtnet accepts.
		invalid []string
		vcpus   uint32
	}{
		{file: "vmi-fedora.yaml", name: "vmi-fedora",
			pairs: []fixturePair{{"default", api.BindingBridge, "eth0"}}, vcpus: 1},
		{file: "vmi-masquerade.yaml", name: "vmi-masquerade",
			pairs: []fixturePair{{"testmasquerade", api.BindingMasquerade, "eth0"}}, vcpus: 1},
		{file: "vmi-sriov.yaml", name: "vmi-sriov",
			pairs: []fixturePair{{"default", api.BindingMasquerade, "eth0"}, {"sriov-net", api.BindingSRIOV, "net1"}}, vcpus: 1},
		{file: "vmi-macvtap.yaml", name: "vmi-macvtap",
			pairs: []fixturePair{{"macvtap", api.BindingMacvtap, "net1"}}, vcpus: 1},
		{file: "vmi-multus-multiple-net.yaml", name: "vmi-multus-multiple-net",
			pairs: []fixturePair{{"default", api.BindingMasquerade, "eth0"}, {"ptp", api.BindingBridge, "net1"}}, vcpus: 1},
		// KubeVirt accepts interface names of [A-Za-z0-9_-]+, and so does
		// virtnet: testSlirp loads.
		{file: "vmi-slirp.yaml", name: "vmi-slirp",
			pairs: []fixturePair{{"testSlirp", api.BindingSlirp, "eth0"}}, vcpus: 1},
		{file: "vmi-gpu.yaml", name: "vmi-gpu",
			pairs:       []fixturePair{{"default", api.BindingBridge, "eth0"}},
			unsupported: []string{"spec.domain.devices.gpus"}, vcpus: 1},
		{file: "vm-cirros.yaml", name: "vm-cirros",
			pairs: []fixturePair{{"default", api.BindingBridge, "eth0"}}, vcpus: 1},
		{file: "vmi-windows.yaml", name: "vmi-windows",
			pairs: []fixturePair{{"default", api.BindingMasquerade, "eth0"}}, vcpus: 2},
		{file: "vmi-ephemeral.yaml", name: "vmi-ephemeral",
			pairs: []fixturePair{{"default", api.BindingBridge, "eth0"}}, vcpus: 1},
		{file: "vmi-nocloud.yaml", name: "vmi-nocloud",
			pairs: []fixturePair{{"default", api.BindingBridge, "eth0"}}, vcpus: 1},
		{file: "vmi-alpine-efi.yaml", name: "vmi-alpine-efi",
			pairs: []fixturePair{{"default", api.BindingBridge, "eth0"}}, vcpus: 1},
		{file: "vmi-host-disk.yaml", name: "vmi-host-disk",
			pairs: []fixturePair{{"default", api.BindingBridge, "eth0"}}, vcpus: 1},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		seen[tt.file] = true
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "kubevirt", tt.file))
			require.NoError(t, err)

			vmi, err := api.Decode(data)
			require.NoError(t, err)
			require.Equal(t, api.KindVMI, vmi.Kind)
			require.Equal(t, tt.name, vmi.Metadata.Name)
			require.Equal(t, tt.unsupported, vmi.Unsupported)

			api.SetDefaults(vmi)
			require.Equal(t, "default", vmi.Metadata.Namespace)
			for _, iface := range vmi.Spec.Domain.Devices.Interfaces {
				require.NotEmpty(t, iface.Model, "interface %s has no model after SetDefaults", iface.Name)
			}
			require.Equal(t, tt.vcpus, vmi.VCPUs())

			err = api.Validate(vmi)
			if tt.invalid != nil {
				require.ErrorIs(t, err, api.ErrInvalid)
				require.ElementsMatch(t, tt.invalid, fieldPaths(err))
				_, err = api.Load(data)
				require.ErrorIs(t, err, api.ErrInvalid)
				return
			}
			require.NoError(t, err)

			pairs, err := api.Pairs(vmi)
			require.NoError(t, err)
			got := make([]fixturePair, len(pairs))
			for i, p := range pairs {
				got[i] = fixturePair{p.Interface.Name, p.Binding(), p.PodInterface}
				require.Equal(t, p.Network.Name, p.Interface.Name)
			}
			require.Equal(t, tt.pairs, got)

			loaded, err := api.Load(data)
			require.NoError(t, err)
			require.Equal(t, vmi, loaded, "Load must equal Decode+SetDefaults+Validate")
		})
	}
	// Every file in testdata/kubevirt has a row.
	files, err := filepath.Glob(filepath.Join("testdata", "kubevirt", "*.yaml"))
	require.NoError(t, err)
	for _, f := range files {
		require.True(t, seen[filepath.Base(f)], "fixture %s has no row", f)
	}
}

func fieldPaths(err error) []string {
	var out []string
	for _, fe := range api.FieldErrors(err) {
		out = append(out, fe.Path)
	}
	return out
}

func TestFixtureDetails(t *testing.T) {
	load := func(t *testing.T, file string) *api.VMI {
		data, err := os.ReadFile(filepath.Join("testdata", "kubevirt", file))
		require.NoError(t, err)
		vmi, err := api.Load(data)
		require.NoError(t, err)
		return vmi
	}
	t.Run("masquerade ports", func(t *testing.T) {
		vmi := load(t, "vmi-masquerade.yaml")
		require.Equal(t, []api.Port{{Name: "http", Protocol: "TCP", Port: 80}}, vmi.Spec.Domain.Devices.Interfaces[0].Ports)
		require.Equal(t, "virtio", vmi.Spec.Domain.Devices.Interfaces[0].Model)
	})
	t.Run("sriov multus network", func(t *testing.T) {
		vmi := load(t, "vmi-sriov.yaml")
		require.Equal(t, &api.MultusNetwork{NetworkName: "sriov/sriov-network"}, vmi.Spec.Networks[1].Multus)
	})
	t.Run("windows", func(t *testing.T) {
		vmi := load(t, "vmi-windows.yaml")
		d := vmi.Spec.Domain
		require.Equal(t, "e1000", d.Devices.Interfaces[0].Model, "an explicit model is kept")
		require.Equal(t, "5d307ca9-b3ef-428c-8861-06e72d69f223", d.Firmware.UUID)
		require.NotNil(t, d.Firmware.Bootloader.EFI)
		require.True(t, *d.Firmware.Bootloader.EFI.SecureBoot)
		require.Equal(t, uint32(8191), *d.Features.HyperV.Spinlocks.Retries)
		require.True(t, d.Features.HyperV.Relaxed.On())
		require.Equal(t, "delay", d.Clock.Timer.PIT.TickPolicy)
		require.False(t, *d.Clock.Timer.HPET.Present)
		require.NotNil(t, d.Clock.UTC)
		require.NotNil(t, d.Devices.TPM)
		require.Equal(t, "sata", d.Devices.Disks[0].Disk.Bus)
		require.Equal(t, "2Gi", d.Resources.Requests["memory"])
		require.Equal(t, "disk-windows", vmi.Spec.Volumes[0].PersistentVolumeClaim.ClaimName)
	})
	t.Run("nocloud empty disk", func(t *testing.T) {
		vmi := load(t, "vmi-nocloud.yaml")
		require.Equal(t, "2Gi", vmi.Spec.Volumes[2].EmptyDisk.Capacity)
		require.Contains(t, vmi.Spec.Volumes[1].CloudInitNoCloud.UserData, "printed from cloud-init userdata")
	})
	t.Run("host disk", func(t *testing.T) {
		vmi := load(t, "vmi-host-disk.yaml")
		require.Equal(t, &api.HostDiskSource{Path: "/var/data/disk.img", Type: "DiskOrCreate", Capacity: "1Gi"}, vmi.Spec.Volumes[0].HostDisk)
	})
	t.Run("virtual machine template", func(t *testing.T) {
		vmi := load(t, "vm-cirros.yaml")
		require.Equal(t, map[string]string{"kubevirt.io/vm": "vm-cirros"}, vmi.Metadata.Labels)
		require.Len(t, vmi.Spec.Volumes, 2)
		require.Equal(t, "128Mi", vmi.Spec.Domain.Resources.Requests["memory"])
	})
}

func TestDecodeVirtualMachine(t *testing.T) {
	tests := []struct {
		name     string
		manifest string
		want     api.ObjectMeta
		wantErr  string
	}{
		{
			name: "template metadata wins",
			manifest: `
kind: VirtualMachine
metadata: {name: outer, namespace: ns1, uid: u-outer}
spec:
  running: true
  template:
    metadata: {name: inner, namespace: ns2, uid: u-inner}
    spec: {domain: {devices: {}}}
`,
			want: api.ObjectMeta{Name: "inner", Namespace: "ns2", UID: "u-inner"},
		},
		{
			name: "VM metadata fills the gaps",
			manifest: `
kind: VirtualMachine
metadata: {name: outer, namespace: ns1, uid: u-outer}
spec:
  template:
    metadata: {labels: {a: b}}
    spec: {domain: {devices: {}}}
`,
			want: api.ObjectMeta{Name: "outer", Namespace: "ns1", UID: "u-outer", Labels: map[string]string{"a": "b"}},
		},
		{
			name:     "no template",
			manifest: "kind: VirtualMachine\nmetadata: {name: vm}\nspec: {running: true}\n",
			wantErr:  "no spec.template.spec",
		},
		{
			name:     "null template spec",
			manifest: "kind: VirtualMachine\nmetadata: {name: vm}\nspec: {template: {spec: null}}\n",
			wantErr:  "no spec.template.spec",
		},
		{
			name:     "VM spec of the VMI's shape is not read",
			manifest: "kind: VirtualMachine\nmetadata: {name: vm}\nspec: {domain: {devices: {}}}\n",
			wantErr:  "no spec.template.spec",
		},
		{
			name:     "other kind",
			manifest: "kind: Pod\nmetadata: {name: p}\n",
			wantErr:  `kind "Pod"`,
		},
		{
			name:     "not YAML",
			manifest: "spec: [\n",
			wantErr:  "not YAML or JSON",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vmi, err := api.Decode([]byte(tt.manifest))
			if tt.wantErr != "" {
				require.ErrorIs(t, err, api.ErrDecode)
				require.Contains(t, err.Error(), tt.wantErr)
				require.False(t, errors.Is(err, api.ErrInvalid))
				return
			}
			require.NoError(t, err)
			require.Equal(t, api.KindVMI, vmi.Kind)
			require.Equal(t, tt.want, vmi.Metadata)
		})
	}
}

func TestDecodeVirtualMachineUsesTemplateSpec(t *testing.T) {
	vmi, err := api.Load([]byte(`
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: vm1}
spec:
  runStrategy: Always
  dataVolumeTemplates: [{metadata: {name: dv}}]
  template:
    spec:
      domain:
        devices:
          gpus: [{name: g, deviceName: x}]
          interfaces: [{name: red, masquerade: {}}]
      networks: [{name: red, pod: {}}]
      volumes:
      - name: v
        containerDisk: {image: img}
        downwardMetrics: {}
`))
	require.NoError(t, err)
	require.Equal(t, "vm1", vmi.Metadata.Name)
	require.Equal(t, "red", vmi.Spec.Domain.Devices.Interfaces[0].Name)
	require.Equal(t, []string{
		"spec.template.spec.domain.devices.gpus",
		"spec.template.spec.volumes[0].downwardMetrics",
	}, vmi.Unsupported)
}

// TestDecodeKnownFieldsVirtnetIgnores: fields of KubeVirt v0.53's schema
// that virtnet does not read load as before (ignored, or listed in
// Unsupported when they change the guest): a real manifest is never
// refused for what KubeVirt accepts.
func TestDecodeKnownFieldsVirtnetIgnores(t *testing.T) {
	vmi, err := api.Load([]byte(`
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: x
  creationTimestamp: null
  finalizers: [a]
  generation: 3
  ownerReferences: [{apiVersion: kubevirt.io/v1, kind: VirtualMachine, name: vm, uid: u, controller: true}]
  managedFields: [{manager: kubectl, operation: Update, fieldsType: FieldsV1, fieldsV1: {"f:spec": {"f:domain": {}}}}]
status: {phase: Running, interfaces: [{name: a, ipAddress: 10.0.0.1, podInterfaceName: eth0, fieldOfKubeVirt2: x}], conditions: [{type: Ready, status: "True"}]}
spec:
  nodeSelector: {a: b}
  evictionStrategy: LiveMigrate
  terminationGracePeriodSeconds: 30
  readinessProbe: {tcpSocket: {port: 22}, initialDelaySeconds: 5}
  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: k, operator: In, values: [v]}]}]}}}
  tolerations: [{key: k, operator: Exists, effect: NoSchedule}]
  dnsPolicy: ClusterFirst
  dnsConfig: {nameservers: [1.1.1.1], options: [{name: ndots, value: "2"}]}
  domain:
    cpu: {cores: 2, model: host-passthrough, dedicatedCpuPlacement: true, features: [{name: x2apic, policy: require}]}
    memory: {guest: 1Gi, hugepages: {pageSize: 2Mi}}
    firmware: {serial: s1, uuid: 5d307ca9-b3ef-428c-8861-06e72d69f223}
    features: {acpi: {}, hyperv: {relaxed: {}, spinlocks: {spinlocks: 8191}}}
    resources: {requests: {memory: 1Gi, cpu: "1"}, overcommitGuestOverhead: true}
    devices:
      autoattachGraphicsDevice: false
      interfaces:
      - name: a
        bridge: {}
        tag: web
        acpiIndex: 3
  networks:
  - name: a
    pod: {}
`))
	require.NoError(t, err)
	require.Empty(t, vmi.Unsupported)
	require.Equal(t, api.BindingBridge, vmi.Spec.Domain.Devices.Interfaces[0].Binding())
}

// TestDecodeStrict: decoding is as strict as the API server with strict
// field validation. Unknown fields (not in KubeVirt's schema, nor in
// virtnet's types), keys in the wrong case and keys given twice are each a
// FieldError naming the path, all at once, and the manifest does not load.
func TestDecodeStrict(t *testing.T) {
	const iface = "spec.domain.devices.interfaces[0]"
	vmi := func(ifaces string) string {
		return "kind: VirtualMachineInstance\nmetadata: {name: s}\nspec:\n  domain: {devices: {interfaces: " + ifaces + "}}\n  networks: [{name: a, pod: {}}]\n"
	}
	tests := []struct {
		name     string
		manifest string
		want     []problem
	}{
		{"binding key in the wrong case", vmi(`[{name: a, Masquerade: {}}]`),
			[]problem{{iface + ".Masquerade", `did you mean "masquerade"?`}}},
		{"MACADDRESS", vmi(`[{name: a, bridge: {}, MACADDRESS: "02:00:00:00:00:01"}]`),
			[]problem{{iface + ".MACADDRESS", `did you mean "macAddress"?`}}},
		{"JSON key in the wrong case", `{"kind":"VirtualMachineInstance","metadata":{"name":"j"},"Spec":{}}`,
			[]problem{{"Spec", `did you mean "spec"?`}}},
		{"unknown fields at every level", `
kind: VirtualMachineInstance
metadata: {name: x, labelz: {a: b}}
spec:
  someFutureField: {deep: [1, 2, 3]}
  domain:
    futureDomainKnob: true
    devices:
      futureDevice: {}
      interfaces: [{name: a, bridge: {futureBridgeKnob: 1}, futureInterfaceKnob: x}]
  networks: [{name: a, pod: {futureKnob: 1}}]
`, []problem{
			{"metadata.labelz", "unknown field"},
			{"spec.someFutureField", "unknown field"},
			{"spec.domain.futureDomainKnob", "unknown field"},
			{"spec.domain.devices.futureDevice", "unknown field"},
			{iface + ".bridge.futureBridgeKnob", "unknown field"},
			{iface + ".futureInterfaceKnob", "unknown field"},
			{"spec.networks[0].pod.futureKnob", "unknown field"},
		}},
		{"typo inside a KubeVirt field virtnet ignores", `
kind: VirtualMachineInstance
metadata: {name: x}
spec:
  affinity: {nodeAfinity: {}}
  readinessProbe: {tcpSocket: {port: 22}, initialDelay: 5}
  domain: {devices: {}}
`, []problem{{"spec.affinity.nodeAfinity", "unknown field"}, {"spec.readinessProbe.initialDelay", "unknown field"}}},
		{"typo in a VirtualMachine", `
kind: VirtualMachine
metadata: {name: vm}
spec:
  runStartegy: Always
  template:
    spec:
      domain: {devices: {interfaces: [{name: a, masquerade: {}, Ports: []}]}}
      networks: [{name: a, pod: {}}]
`, []problem{{"spec.runStartegy", "unknown field"}, {"spec.template.spec.domain.devices.interfaces[0].Ports", `did you mean "ports"?`}}},
		{"duplicate YAML keys", `
kind: VirtualMachineInstance
metadata: {name: x, labels: {a: "1", a: "2"}}
spec:
  domain:
    devices:
      interfaces:
      - name: a
        bridge: {}
        macAddress: "02:00:00:00:00:01"
        macAddress: "02:00:00:00:00:02"
  networks: [{name: a, pod: {}}]
  networks: []
`, []problem{{"metadata.labels.a", "duplicate field"}, {iface + ".macAddress", "duplicate field"}, {"spec.networks", "duplicate field"}}},
		{"duplicate JSON keys", `{"kind":"VirtualMachineInstance","metadata":{"name":"j","name":"k"},"spec":{"domain":{"devices":{}},"hostname":"a","hostname":"b"}}`,
			[]problem{{"metadata.name", "duplicate field"}, {"spec.hostname", "duplicate field"}}},
		{"duplicate inside an unknown field", vmi(`[{name: a, bridge: {}, x: {y: 1, y: 2}}]`),
			[]problem{{iface + ".x", "unknown field"}, {iface + ".x.y", "duplicate field"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := api.Decode([]byte(tt.manifest))
			require.ErrorIs(t, err, api.ErrDecode)
			require.ErrorIs(t, err, api.ErrInvalid)
			var want []string
			for _, p := range tt.want {
				want = append(want, p.path)
			}
			require.ElementsMatch(t, want, fieldPaths(err), "%v", err)
			for _, p := range tt.want {
				found := false
				for _, fe := range api.FieldErrors(err) {
					found = found || fe.Path == p.path && strings.Contains(fe.Error(), p.text)
				}
				require.True(t, found, "no error at %s containing %q in:\n%v", p.path, p.text, err)
			}
			_, err = api.Load([]byte(tt.manifest))
			require.ErrorIs(t, err, api.ErrDecode, "Load refuses it too")
		})
	}
	t.Run("at most 50 listed", func(t *testing.T) {
		var b strings.Builder
		b.WriteString("kind: VirtualMachineInstance\nmetadata: {name: x}\nspec:\n  domain: {devices: {}}\n")
		for i := range 200 {
			fmt.Fprintf(&b, "  unknown%d: 1\n", i)
		}
		_, err := api.Decode([]byte(b.String()))
		fes := api.FieldErrors(err)
		require.Len(t, fes, 51)
		require.Equal(t, "150 more unknown, duplicate or mistyped fields not listed", fes[50].Reason)
	})
}

func TestDecodeJSON(t *testing.T) {
	vmi, err := api.Load([]byte(`{"kind":"VirtualMachineInstance","metadata":{"name":"j"},` +
		`"spec":{"domain":{"devices":{"interfaces":[{"name":"a","masquerade":{},"ports":[{"port":22}]}]}},` +
		`"networks":[{"name":"a","pod":{}}]}}`))
	require.NoError(t, err)
	require.Equal(t, []api.Port{{Protocol: "TCP", Port: 22}}, vmi.Spec.Domain.Devices.Interfaces[0].Ports)
}

func TestDecodeTooLarge(t *testing.T) {
	_, err := api.Decode([]byte(strings.Repeat(" ", api.MaxManifestSize+1)))
	require.ErrorIs(t, err, api.ErrDecode)
	require.ErrorContains(t, err, fmt.Sprintf("manifest is %d bytes, more than %d", api.MaxManifestSize+1, api.MaxManifestSize))
}

func TestUnsupported(t *testing.T) {
	tests := []struct {
		name    string
		devices string
		extra   string
		want    []string
	}{
		{name: "none", devices: "{}", want: nil},
		{name: "gpus", devices: "{gpus: [{name: g, deviceName: nvidia.com/x}]}",
			want: []string{"spec.domain.devices.gpus"}},
		{name: "hostDevices", devices: "{hostDevices: [{name: h, deviceName: x}]}",
			want: []string{"spec.domain.devices.hostDevices"}},
		{name: "empty lists and false flags are nothing", devices: "{gpus: [], hostDevices: [], blockMultiQueue: false}",
			want: nil},
		{name: "several in a stable order",
			devices: "{watchdog: {name: w}, filesystems: [{name: f}], gpus: [{name: g}], sound: {name: s}, inputs: [{name: i}]}",
			want: []string{"spec.domain.devices.gpus", "spec.domain.devices.filesystems", "spec.domain.devices.sound",
				"spec.domain.devices.watchdog", "spec.domain.devices.inputs"}},
		{name: "domain level", devices: "{}", extra: "    launchSecurity: {sev: {}}\n    ioThreadsPolicy: auto\n",
			want: []string{"spec.domain.ioThreadsPolicy", "spec.domain.launchSecurity"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := "kind: VirtualMachineInstance\nmetadata: {name: u}\nspec:\n  domain:\n    devices: " + tt.devices + "\n" + tt.extra +
				"  volumes:\n  - {name: a, containerDisk: {image: i}}\n  - {name: b, configMap: {name: c}}\n  - {name: c, serviceAccount: {serviceAccountName: s}}\n"
			vmi, err := api.Decode([]byte(m))
			require.NoError(t, err)
			want := append(tt.want, "spec.volumes[1].configMap", "spec.volumes[2].serviceAccount")
			require.Equal(t, want, vmi.Unsupported)
			// Unsupported features are not validation errors: the
			// renderer refuses them by name.
			api.SetDefaults(vmi)
			require.Empty(t, fieldPaths(api.Validate(vmi)))
		})
	}
}

func TestSetDefaults(t *testing.T) {
	tests := []struct {
		name     string
		manifest string
		check    func(t *testing.T, vmi *api.VMI)
	}{
		{
			name:     "pod network and bridge interface when none",
			manifest: "metadata: {name: d}\nspec: {domain: {devices: {}}}\n",
			check: func(t *testing.T, vmi *api.VMI) {
				require.Equal(t, []api.Network{{Name: "default", Pod: &api.PodNetwork{}}}, vmi.Spec.Networks)
				require.Equal(t, []api.Interface{{Name: "default", Bridge: &struct{}{}, Model: "virtio"}}, vmi.Spec.Domain.Devices.Interfaces)
			},
		},
		{
			name:     "autoattachPodInterface false adds nothing",
			manifest: "metadata: {name: d}\nspec: {domain: {devices: {autoattachPodInterface: false}}}\n",
			check: func(t *testing.T, vmi *api.VMI) {
				require.Empty(t, vmi.Spec.Networks)
				require.Empty(t, vmi.Spec.Domain.Devices.Interfaces)
			},
		},
		{
			name:     "autoattachPodInterface true is the default",
			manifest: "metadata: {name: d}\nspec: {domain: {devices: {autoattachPodInterface: true}}}\n",
			check: func(t *testing.T, vmi *api.VMI) {
				require.Len(t, vmi.Spec.Networks, 1)
				require.Equal(t, "default", vmi.Spec.Domain.Devices.Interfaces[0].Name)
			},
		},
		{
			name: "declared interfaces are kept, models and protocols filled",
			manifest: `
metadata: {name: d, namespace: prod}
spec:
  domain:
    devices:
      interfaces:
      - {name: a, masquerade: {}, ports: [{port: 80}, {port: 53, protocol: UDP}]}
      - {name: b, bridge: {}, model: e1000e}
  networks: [{name: a, pod: {}}, {name: b, multus: {networkName: nad}}]
`,
			check: func(t *testing.T, vmi *api.VMI) {
				require.Equal(t, "prod", vmi.Metadata.Namespace)
				ifs := vmi.Spec.Domain.Devices.Interfaces
				require.Len(t, ifs, 2)
				require.Equal(t, "virtio", ifs[0].Model)
				require.Equal(t, "e1000e", ifs[1].Model)
				require.Equal(t, []api.Port{{Protocol: "TCP", Port: 80}, {Protocol: "UDP", Port: 53}}, ifs[0].Ports)
			},
		},
		{
			name:     "networks without interfaces: nothing added",
			manifest: "metadata: {name: d}\nspec: {networks: [{name: a, pod: {}}], domain: {devices: {}}}\n",
			check: func(t *testing.T, vmi *api.VMI) {
				require.Empty(t, vmi.Spec.Domain.Devices.Interfaces)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vmi, err := api.Decode([]byte(tt.manifest))
			require.NoError(t, err)
			api.SetDefaults(vmi)
			tt.check(t, vmi)
			once, err := api.Decode([]byte(tt.manifest))
			require.NoError(t, err)
			api.SetDefaults(once)
			api.SetDefaults(vmi)
			require.Equal(t, once, vmi, "SetDefaults is idempotent")
		})
	}
}
