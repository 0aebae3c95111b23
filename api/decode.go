package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"sigs.k8s.io/yaml"
)

// MaxManifestSize bounds the manifests [Decode] accepts.
const MaxManifestSize = 4 << 20

// Decode reads a KubeVirt manifest, YAML or JSON, of kind
// VirtualMachineInstance or VirtualMachine (whose spec.template is used,
// with the VirtualMachine's name, namespace and uid where the template has
// none, and the firmware UUID [VMFirmwareUUID] where it sets none). Unknown fields are ignored; the KubeVirt features virtnet does not
// render are listed in [VMI.Unsupported]. Decode applies no defaults and
// does not validate: see [SetDefaults] and [Validate], or [Load] for all
// three.
func Decode(data []byte) (*VMI, error) {
	if len(data) > MaxManifestSize {
		return nil, &DecodeError{Reason: fmt.Sprintf("manifest is %d bytes, more than %d", len(data), MaxManifestSize)}
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, &DecodeError{Reason: "not YAML or JSON", Err: err}
	}
	var head struct {
		Kind     string          `json:"kind"`
		Metadata ObjectMeta      `json:"metadata"`
		Spec     json.RawMessage `json:"spec"`
	}
	if err := json.Unmarshal(js, &head); err != nil {
		return nil, &DecodeError{Reason: "not a Kubernetes object", Err: err}
	}
	prefix := "spec"
	body := js
	switch head.Kind {
	case KindVMI, "":
	case KindVM:
		var vm struct {
			Spec struct {
				Template *struct {
					Metadata ObjectMeta      `json:"metadata"`
					Spec     json.RawMessage `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(js, &vm); err != nil {
			return nil, &DecodeError{Reason: "VirtualMachine", Err: err}
		}
		if vm.Spec.Template == nil || len(vm.Spec.Template.Spec) == 0 || string(vm.Spec.Template.Spec) == "null" {
			return nil, &DecodeError{Reason: "VirtualMachine has no spec.template.spec"}
		}
		meta := vm.Spec.Template.Metadata
		if meta.Name == "" {
			meta.Name = head.Metadata.Name
		}
		if meta.Namespace == "" {
			meta.Namespace = head.Metadata.Namespace
		}
		if meta.UID == "" {
			meta.UID = head.Metadata.UID
		}
		wrapped, err := json.Marshal(struct {
			Kind     string          `json:"kind"`
			Metadata ObjectMeta      `json:"metadata"`
			Spec     json.RawMessage `json:"spec"`
		}{KindVMI, meta, vm.Spec.Template.Spec})
		if err != nil {
			return nil, &DecodeError{Reason: "VirtualMachine template", Err: err}
		}
		body = wrapped
		prefix = "spec.template.spec"
	default:
		return nil, &DecodeError{Reason: fmt.Sprintf("kind %q is neither %s nor %s", head.Kind, KindVMI, KindVM)}
	}
	var vmi VMI
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&vmi); err != nil {
		return nil, &DecodeError{Reason: "VirtualMachineInstance", Err: err}
	}
	vmi.Kind = KindVMI
	if head.Kind == KindVM {
		// KubeVirt's VM controller: a stable firmware UUID from the
		// VM's name, unless the template sets one.
		if vmi.Spec.Domain.Firmware == nil {
			vmi.Spec.Domain.Firmware = &Firmware{}
		}
		if vmi.Spec.Domain.Firmware.UUID == "" {
			name := head.Metadata.Name // the VMI KubeVirt starts is named after the VM
			if name == "" {
				name = vmi.Metadata.Name
			}
			vmi.Spec.Domain.Firmware.UUID = VMFirmwareUUID(name)
		}
	}
	var raw map[string]any
	if err := json.Unmarshal(body, &raw); err == nil {
		vmi.Unsupported = unsupportedFields(raw, prefix)
	}
	return &vmi, nil
}

// Load decodes a manifest, applies KubeVirt's defaults and validates it.
func Load(data []byte) (*VMI, error) {
	vmi, err := Decode(data)
	if err != nil {
		return nil, err
	}
	SetDefaults(vmi)
	if err := Validate(vmi); err != nil {
		return nil, err
	}
	return vmi, nil
}

// unsupportedDomainKeys are KubeVirt fields under spec.domain and
// spec.domain.devices that change the guest but that virtnet does not
// render. Fields with no effect on the domain (scheduling, probes, …) are
// not listed: ignoring them is correct.
var (
	unsupportedDomainKeys = []string{"ioThreadsPolicy", "launchSecurity"}
	unsupportedDeviceKeys = []string{
		"gpus", "hostDevices", "filesystems", "sound", "watchdog", "clientPassthrough",
		"inputs",
	}
	supportedVolumeKeys = map[string]bool{
		"name": true, "containerDisk": true, "persistentVolumeClaim": true, "dataVolume": true,
		"emptyDisk": true, "hostDisk": true, "cloudInitNoCloud": true, "cloudInitConfigDrive": true,
		"sysprep": true,
	}
)

func unsupportedFields(raw map[string]any, prefix string) []string {
	var out []string
	spec, _ := raw["spec"].(map[string]any)
	domain, _ := spec["domain"].(map[string]any)
	for _, k := range unsupportedDomainKeys {
		if _, ok := domain[k]; ok {
			out = append(out, prefix+".domain."+k)
		}
	}
	devices, _ := domain["devices"].(map[string]any)
	for _, k := range unsupportedDeviceKeys {
		if v, ok := devices[k]; ok && !isEmpty(v) {
			out = append(out, prefix+".domain.devices."+k)
		}
	}
	vols, _ := spec["volumes"].([]any)
	for i, v := range vols {
		m, _ := v.(map[string]any)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !supportedVolumeKeys[k] {
				out = append(out, fmt.Sprintf("%s.volumes[%d].%s", prefix, i, k))
			}
		}
	}
	return out
}

func isEmpty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case []any:
		return len(t) == 0
	case bool:
		return !t
	}
	return false
}
