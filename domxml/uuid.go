package domxml

import (
	"cmp"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/internal/uuidv5"
)

// UUIDNamespace is the name-space UUID of [DomainUUID]: SHA-1 of the
// string "virtnet.domain" under the URL namespace (RFC 4122), computed once and
// written here so that it can never change.
const UUIDNamespace = "df80d55b-855c-5311-b7ce-dba48016db35"

// DomainUUID is the domain UUID of a VMI: spec.domain.firmware.uuid when
// set, else the version-5 (SHA-1) UUID of the VMI's metadata.uid under
// [UUIDNamespace] (of "<namespace>/<name>" when the VMI has no uid).
func DomainUUID(vmi *api.VMI) string {
	if f := vmi.Spec.Domain.Firmware; f != nil && f.UUID != "" {
		return f.UUID
	}
	return uuidv5.SHA1(UUIDNamespace, cmp.Or(vmi.Metadata.UID, vmi.Metadata.Namespace+"/"+vmi.Metadata.Name))
}

// FillUID sets metadata.uid, when the VMI has none, to the version-5 UUID
// of "<namespace>/<name>" under [UUIDNamespace]. The API server gives every
// object its uid; a manifest fresh from a repository has none, and phase1's
// records and the domain UUID need one that is the same on every run.
// virtnet-xml and the example launcher both call it, so that a manifest
// previewed with one is launched with the same uid by the other.
func FillUID(vmi *api.VMI) {
	if vmi.Metadata.UID == "" {
		vmi.Metadata.UID = uuidv5.SHA1(UUIDNamespace, vmi.Metadata.Namespace+"/"+vmi.Metadata.Name)
	}
}
