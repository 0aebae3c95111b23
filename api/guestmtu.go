package api

import (
	"fmt"
	"strconv"
	"strings"
)

// GuestMTUAnnotation clamps the MTU of VM interfaces below their pod
// links': "<interface>=<mtu>[,<interface>=<mtu>…]", for example
// "default=1400". The clamp can only lower the MTU: the binding refuses
// one above its pod link's (see docs/mtu-and-passt.md). It is an
// annotation because KubeVirt's Interface has no MTU field, and an
// annotation reaches phase1 and phase2 with the VMI unchanged, where a
// field outside kubevirt.io/v1 would be refused by KubeVirt's admission.
const GuestMTUAnnotation = "virtnet.io/guest-mtu"

// MinGuestMTU is the smallest clamp: IPv6's minimum link MTU.
const MinGuestMTU = 1280

// GuestMTU returns the clamp GuestMTUAnnotation asks for the interface
// named iface, 0 when it asks none. A malformed annotation, an entry
// naming no interface of the VMI or given twice, or an MTU below
// MinGuestMTU is a *FieldError whose path names the annotation and the
// entry.
func (v *VMI) GuestMTU(iface string) (int, error) {
	raw, ok := v.Metadata.Annotations[GuestMTUAnnotation]
	if !ok {
		return 0, nil
	}
	path := "metadata.annotations[" + GuestMTUAnnotation + "]"
	known := map[string]bool{}
	for _, i := range v.Spec.Domain.Devices.Interfaces {
		known[i.Name] = true
	}
	seen := map[string]bool{}
	mtu := 0
	for _, entry := range strings.Split(raw, ",") {
		entry = strings.TrimSpace(entry)
		name, val, ok := strings.Cut(entry, "=")
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		if !ok || name == "" {
			return 0, &FieldError{Path: path, Value: entry, Reason: "want <interface>=<mtu>[,<interface>=<mtu>…]"}
		}
		p := fmt.Sprintf("%s.%s", path, name)
		if !known[name] {
			return 0, &FieldError{Path: p, Value: val, Reason: "no interface of spec.domain.devices.interfaces has this name"}
		}
		if seen[name] {
			return 0, &FieldError{Path: p, Value: val, Reason: "interface given twice"}
		}
		seen[name] = true
		n, err := strconv.Atoi(val)
		if err != nil || n < MinGuestMTU || n > 65535 {
			return 0, &FieldError{Path: p, Value: val, Reason: fmt.Sprintf("not an MTU between %d (IPv6's minimum) and 65535", MinGuestMTU)}
		}
		if name == iface {
			mtu = n
		}
	}
	return mtu, nil
}
