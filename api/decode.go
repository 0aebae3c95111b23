package api

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// MaxManifestSize bounds the manifests [Decode] and [DecodeKubeVirt]
// accept.
const MaxManifestSize = 4 << 20

// Decode reads a KubeVirt manifest, YAML or JSON, of kind
// VirtualMachineInstance or VirtualMachine (whose spec.template is used,
// with the VirtualMachine's name, namespace and uid where the template has
// none, and the firmware UUID [VMFirmwareUUID] where it sets none). It
// decodes as the Kubernetes API server does with strict field
// validation (kubectl's default):
//
//   - field names are case-sensitive ("Masquerade" is not "masquerade");
//   - a field given twice in one object is an error;
//   - a field that is neither in KubeVirt's VirtualMachineInstance (or
//     VirtualMachine) schema, v0.53.2's or v1.9.0's, nor in what virtnet
//     reads is an error;
//   - under status, which KubeVirt writes, any field is accepted (and
//     not listed in [VMI.Unknown]), in this mode and in
//     [DecodeKubeVirt]'s; the fields virtnet reads there (runtimeUser,
//     migrationTransport, interfaces) must have their type, and a key
//     given twice is an error there as everywhere.
//
// These come back together as one error, matching [ErrDecode], that wraps
// one [*FieldError] per field (see [FieldErrors]) and matches [ErrInvalid]. Fields that
// KubeVirt knows and virtnet does not read are accepted: those that change
// the guest and that virtnet does not render are listed in
// [VMI.Unsupported], the others (scheduling, probes, status, …) have no
// effect on what virtnet does. YAML aliases may not expand the manifest
// beyond [MaxAliasExpansion] times its size (an error matching
// [ErrDecode] and [ErrAliasExpansion]). Decoding allocates at most 8 times a JSON
// manifest's size plus 4 MiB, whatever its shape (nesting, key length,
// width); YAML's parser costs more per node (up to about 130 times the
// size for a manifest of tiny nodes), linear too. Decode applies no
// defaults and does not validate:
// see [SetDefaults] and [Validate], or [Load] for all three.
//
// Decode is for manifests people write (the CLIs, [Load]); a VMI that
// KubeVirt itself serialised goes through [DecodeKubeVirt].
func Decode(data []byte) (*VMI, error) { return decode(data, false) }

// DecodeKubeVirt is [Decode] for a VMI that KubeVirt serialised (the one
// virt-launcher hands a hook sidecar in OnDefineDomain, a VMI object a
// launcher is given): a field that neither KubeVirt's schema nor virtnet
// knows is accepted and listed, by path, in [VMI.Unknown] (a newer
// KubeVirt adds and defaults fields; refusing them would stop every VM
// the day KubeVirt is upgraded). Field names stay case-sensitive (a key
// that differs from a known one in case only is still an error: it is a
// known field misspelt, not a new one) and a field given twice is still
// an error. The caller logs [VMI.Unknown]; virtnet renders nothing from
// those fields. The data must be JSON (as KubeVirt writes it): YAML is
// refused.
func DecodeKubeVirt(data []byte) (*VMI, error) { return decode(data, true) }

// LoadKubeVirt is [Load] with [DecodeKubeVirt]: JSON only.
func LoadKubeVirt(data []byte) (*VMI, error) { return load(data, true) }

func decode(data []byte, lenient bool) (*VMI, error) {
	d, err := decodeManifest(data, lenient)
	if err != nil {
		return nil, err
	}
	if len(d.fieldErrs) > 0 {
		return nil, fmt.Errorf("%w: strict decoding: %w", ErrDecode, errors.Join(d.fieldErrs...))
	}
	return d.vmi, nil
}

// decoded is a manifest decoded as far as it goes: with fieldErrs (unknown,
// duplicate or mistyped fields) vmi holds every other field, so that Load
// can validate them in the same pass.
type decoded struct {
	vmi       *VMI
	fromVM    bool
	fieldErrs []error
}

func decodeManifest(data []byte, lenient bool) (decoded, error) {
	if len(data) > MaxManifestSize {
		return decoded{}, fmt.Errorf("%w: manifest is %d bytes, more than %d", ErrDecode, len(data), MaxManifestSize)
	}
	if lenient && !json.Valid(data) {
		// KubeVirt serialises JSON; YAML's parser costs up to a hundred
		// times the input (see MaxManifestSize), which a hook sidecar's
		// caller would choose.
		return decoded{}, fmt.Errorf("%w: not JSON (a VMI KubeVirt serialised is JSON, nested at most 10000 levels)", ErrDecode)
	}
	js, strictErrs, err := toJSON(data)
	if err != nil {
		return decoded{}, err
	}
	var head struct {
		Kind string `json:"kind"`
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(js, &head); err != nil {
		return decoded{}, fmt.Errorf("%w: not a Kubernetes object: %w", ErrDecode, err)
	}
	root, prefix := schemaNode{kv: kubevirtSchema().Roots[KindVMI], gt: reflect.TypeOf(VMI{})}, "spec"
	switch head.Kind {
	case KindVMI, "":
	case KindVM:
		root, prefix = schemaNode{kv: kubevirtSchema().Roots[KindVM], gt: reflect.TypeOf(vmManifest{})}, "spec.template.spec"
	default:
		return decoded{}, fmt.Errorf("%w: kind %q is neither %s nor %s", ErrDecode, head.Kind, KindVMI, KindVM)
	}
	// Unknown, duplicate and mistyped fields all at once, before the
	// decoder, which stops at the first mistyped one.
	errs, unsupported, unknown, err := strictCheck(js, root, prefix, lenient)
	if err != nil {
		return decoded{}, fmt.Errorf("%w: not a Kubernetes object: %w", ErrDecode, err)
	}
	errs = append(strictErrs, errs...)
	// The decoder skips a mistyped value (an *UnmarshalTypeError) and
	// decodes the rest: with the mistyped fields already reported, its
	// error adds nothing.
	tolerated := func(err error) bool {
		var te *json.UnmarshalTypeError
		return len(errs) > 0 && errors.As(err, &te)
	}
	var vmi VMI
	var vm vmManifest
	target, what := any(&vmi), "VirtualMachineInstance"
	if head.Kind == KindVM {
		target, what = &vm, "VirtualMachine"
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(js, target); err != nil && !tolerated(err) {
		if len(errs) > 0 {
			return decoded{}, fmt.Errorf("%w: strict decoding: %w", ErrDecode, errors.Join(errs...))
		}
		return decoded{}, fmt.Errorf("%w: %s: %w", ErrDecode, what, err)
	}
	if head.Kind == KindVM {
		t := vm.Spec.Template
		if t == nil || t.Spec == nil {
			return decoded{}, fmt.Errorf("%w: VirtualMachine has no spec.template.spec", ErrDecode)
		}
		vmi.Metadata, vmi.Spec = t.Metadata, *t.Spec
		vmi.Metadata.Name = cmp.Or(vmi.Metadata.Name, vm.Metadata.Name)
		vmi.Metadata.Namespace = cmp.Or(vmi.Metadata.Namespace, vm.Metadata.Namespace)
		vmi.Metadata.UID = cmp.Or(vmi.Metadata.UID, vm.Metadata.UID)
		// KubeVirt's VM controller: a stable firmware UUID from the VM's
		// name, unless the template sets one.
		if vmi.Spec.Domain.Firmware == nil {
			vmi.Spec.Domain.Firmware = &Firmware{}
		}
		if vmi.Spec.Domain.Firmware.UUID == "" {
			// The VMI KubeVirt starts is named after the VM.
			vmi.Spec.Domain.Firmware.UUID = VMFirmwareUUID(cmp.Or(vm.Metadata.Name, vmi.Metadata.Name))
		}
	}
	vmi.Kind = KindVMI
	vmi.Unsupported = unsupported
	vmi.Unknown = unknown
	return decoded{vmi: &vmi, fromVM: head.Kind == KindVM, fieldErrs: errs}, nil
}

// vmManifest is the part of a VirtualMachine that Decode reads.
type vmManifest struct {
	Kind     string     `json:"kind,omitempty"`
	Metadata ObjectMeta `json:"metadata"`
	Spec     struct {
		Template *struct {
			Metadata ObjectMeta `json:"metadata"`
			Spec     *VMISpec   `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

// toJSON returns data as JSON: as it is when it is JSON, else converted
// from YAML as the API server converts it (sigs.k8s.io/yaml), with the
// duplicate keys, which the conversion drops, reported by path. A manifest
// with a '*' (an alias needs one) is first checked without expanding
// anything ([checkYAML]: aliases bounded, duplicate keys found). Without a
// '*', the conversion's own strict mode looks for duplicates and checkYAML
// runs only when it found some (to name their paths, and to tell them from
// keys a merge key "<<" overrides, which YAML allows): a manifest without
// aliases pays for one YAML parse.
func toJSON(data []byte) ([]byte, []error, error) {
	if json.Valid(data) {
		return data, nil, nil
	}
	if bytes.IndexByte(data, '*') < 0 {
		if js, err := yaml.YAMLToJSONStrict(data); err == nil {
			return js, nil, nil
		}
	}
	dups, err := checkYAML(data)
	if err != nil {
		return nil, nil, err
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: not YAML or JSON: %w", ErrDecode, err)
	}
	return js, dups, nil
}

// Load decodes a manifest, applies KubeVirt's defaults and validates it.
//
// A VirtualMachine's validation errors name the paths of the
// VirtualMachine (spec.template.spec.domain…, not the VMI's spec.domain…),
// so that they point into the file the user wrote.
//
// Every field error comes back in one pass: with unknown, duplicate or
// mistyped fields, the rest of the manifest is still validated, and the
// error holds both (a validation error about a field that was itself
// mistyped, or about what holds it, is left out: it only repeats it).
func Load(data []byte) (*VMI, error) { return load(data, false) }

func load(data []byte, lenient bool) (*VMI, error) {
	d, err := decodeManifest(data, lenient)
	if err != nil {
		return nil, err
	}
	vmi := d.vmi
	SetDefaults(vmi)
	verr := Validate(vmi)
	if verr != nil && d.fromVM {
		rebaseSpecPaths(verr, "spec.template.spec")
	}
	if len(d.fieldErrs) == 0 {
		if verr != nil {
			return nil, verr
		}
		return vmi, nil
	}
	all := d.fieldErrs
	for _, fe := range FieldErrors(verr) {
		if !overlaps(fe.Path, d.fieldErrs) {
			all = append(all, fe)
		}
	}
	return nil, fmt.Errorf("%w: strict decoding: %w", ErrDecode, errors.Join(all...))
}

// overlaps reports whether path is, holds or lies under the path of one
// of errs.
func overlaps(path string, errs []error) bool {
	under := func(p, parent string) bool {
		rest, ok := strings.CutPrefix(p, parent)
		return ok && (rest == "" || rest[0] == '.' || rest[0] == '[')
	}
	for _, e := range errs {
		var fe *FieldError
		if errors.As(e, &fe) && (under(path, fe.Path) || under(fe.Path, path)) {
			return true
		}
	}
	return false
}

// rebaseSpecPaths moves the FieldErrors of err from the VMI's "spec" to
// prefix (a VirtualMachine's template).
func rebaseSpecPaths(err error, prefix string) {
	for _, fe := range FieldErrors(err) {
		if rest, ok := strings.CutPrefix(fe.Path, "spec"); ok && (rest == "" || rest[0] == '.' || rest[0] == '[') {
			fe.Path = prefix + rest
		}
	}
}

// unsupportedDomainKeys are KubeVirt fields under spec.domain that change
// the guest but that virtnet does not render, unsupportedDeviceKeys the
// same under spec.domain.devices (recorded when not empty), and
// supportedVolumeKeys the keys of a volume virtnet reads (any other key is
// a volume source it does not render). Fields with no effect on the domain
// (scheduling, probes, …) are not listed: ignoring them is correct.
func unsupportedDomainKeys() []string {
	return []string{"ioThreadsPolicy", "launchSecurity"}
}

func unsupportedDeviceKeys() []string {
	return []string{
		"gpus", "hostDevices", "filesystems", "sound", "watchdog", "clientPassthrough",
		"inputs",
	}
}

func supportedVolumeKeys() []string {
	return []string{"name", "containerDisk", "persistentVolumeClaim", "dataVolume",
		"emptyDisk", "hostDisk", "cloudInitNoCloud", "cloudInitConfigDrive", "sysprep"}
}
