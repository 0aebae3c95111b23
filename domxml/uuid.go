package domxml

import (
	"cmp"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/internal/uuidv5"
)

// UUIDNamespace is the name-space UUID of [DomainUUID]: SHA-1 of the
// string "virtnet.domain" under the URL namespace (RFC 4122), computed once and
// written here so that it can never change.
const UUIDNamespace = api.UIDNamespace

// DomainUUID is the domain UUID of a VMI: spec.domain.firmware.uuid when
// set, else the version-5 (SHA-1) UUID of the VMI's metadata.uid under
// [UUIDNamespace] (of "<namespace>/<name>" when the VMI has no uid).
func DomainUUID(vmi *api.VMI) string {
	if f := vmi.Spec.Domain.Firmware; f != nil && f.UUID != "" {
		return f.UUID
	}
	return uuidv5.SHA1(UUIDNamespace, cmp.Or(vmi.Metadata.UID, vmi.Metadata.Namespace+"/"+vmi.Metadata.Name))
}

// FillUID sets metadata.uid, when the VMI has none, to
// [api.DerivedUID] of its namespace and name.
//
// Deprecated: [api.Load] and [api.SetDefaults] do it; FillUID is only
// needed for a VMI built in Go without SetDefaults.
func FillUID(vmi *api.VMI) {
	if vmi.Metadata.UID == "" {
		vmi.Metadata.UID = api.DerivedUID(vmi.Metadata.Namespace, vmi.Metadata.Name)
	}
}
