package binding

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/virtnet/virtnet/internal/errclass"
	"github.com/virtnet/virtnet/netdriver"
)

// ForeignLinkError is a link with the name phase1 needs that phase1 did
// not make: another type, or a tap not owned as asked.
type ForeignLinkError struct {
	Name   string
	Type   string
	Want   string
	Reason string
}

func (e *ForeignLinkError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("link %q is not ours: %s", e.Name, e.Reason)
	}
	return fmt.Sprintf("link %q exists with type %s, want %s: refusing to take it over", e.Name, e.Type, e.Want)
}

// PodLinkError is a pod link that is missing or not as the CNI leaves it.
type PodLinkError struct {
	Name   string
	Reason string
	Err    error
}

func (e *PodLinkError) Error() string {
	// A link-not-found only repeats the name and the reason.
	if e.Err != nil && !netdriver.IsLinkNotFound(e.Err) {
		return fmt.Sprintf("pod link %q: %s: %v", e.Name, e.Reason, e.Err)
	}
	return fmt.Sprintf("pod link %q: %s", e.Name, e.Reason)
}

func (e *PodLinkError) Unwrap() error { return e.Err }

// Permanent reports true: the pod link stays missing or changed until
// someone changes the pod.
func (e *PodLinkError) Permanent() bool { return true }

// Permanent reports true: the link stays someone else's until someone
// removes it.
func (e *ForeignLinkError) Permanent() bool { return true }

// Permanent reports true: the other link keeps the address until someone
// changes the pod.
func (e *AddressInUseError) Permanent() bool { return true }

// ErrNoAddress is returned when a binding needs an address the pod link
// does not have.
// It is permanent (phase1.IsPermanent).
var ErrNoAddress = errclass.Permanent("pod link has no global address")

// ErrIncompleteRecord is matched by the error of a Render given no phase1
// record for the interface, or one without a field the binding needs.
var ErrIncompleteRecord = errors.New("cache record")

// ErrInterfaceType is matched by the error of a Render asked for an
// [InterfaceType] the binding does not render.
var ErrInterfaceType = errors.New("interface type")

// AddressInUseError is an address phase1 must give a link that another
// link already holds.
type AddressInUseError struct {
	Addr netip.Addr
	// Link holds the address; Want is the link phase1 gives it to.
	Link, Want string
}

func (e *AddressInUseError) Error() string {
	return fmt.Sprintf("address %s is already on link %q, phase1 needs it on %q", e.Addr, e.Link, e.Want)
}

// Ownership: phase1 marks every link it creates (bridge, tap, the bridge
// binding's dummy) with an alternative name (`ip link property add dev
// LINK altname MARK`) naming virtnet, the link's role, the VMI and the
// interface ([Mark]), and it changes or deletes a link under one of its
// names only when the link carries that mark. A link with the name but
// without the mark is someone else's: refused before anything changes
// ([Preflight]) and never deleted by a rollback or Cleanup ([DeleteOwned]).
// An alternative name rather than the alias (IFLA_IFALIAS) so that the
// alias stays free for others (the binding plugins' hand-off record lives
// in the tap's alias), and because it follows the link through renames
// and no two links can hold the same one.
//
// The kernel takes no alternative name when it creates a link, so the mark
// is a second call right after the creation. A SIGKILL between the two
// leaves an unmarked link exactly as phase1 creates it; a run that resumes
// the pair (its records existed before the run: [Input.Resumed]) takes
// such a link for its own only when it is still as created: down, no
// master, no address, no port, and for a tap owned as phase1 asks.

// MarkPrefix starts the alternative name of every link phase1 creates.
const MarkPrefix = "virtnet."

// Mark is the alternative name phase1 gives the link of type typ
// (netdriver.TypeBridge, TypeTuntap, TypeDummy) it creates for one VMI
// interface: "virtnet.<type>.<vmi-uid>.<interface>", or, when that is too
// long or holds a character a link name cannot, "virtnet.<type>." and a
// hash of the two.
func Mark(typ, uid, iface string) string {
	m := MarkPrefix + typ + "." + uid + "." + iface
	if len(m) <= netdriver.MaxAltName && !strings.ContainsAny(m, "/: \t\n\r\v\f\x00") {
		return m
	}
	sum := sha256.Sum256([]byte(uid + "/" + iface))
	return MarkPrefix + typ + "." + hex.EncodeToString(sum[:16])
}

// ErrPrepared is matched by the [*PodLinkError] of a pod link that phase1
// already prepared (its cache is gone): discovering it would record
// phase1's own changes as the CNI's.
var ErrPrepared = errors.New("already prepared by phase1 (its cache is gone: run phase1.Cleanup with that cache, or recreate the pod)")

// Mark is the mark of the input's link of type typ.
func (in Input) Mark(typ string) string {
	return Mark(typ, in.VMI.Metadata.UID, in.Pair.Interface.Name)
}

// PortError is a port the VMI declares that a binding cannot forward (a
// protocol the user-space network does not carry); a caller reads the
// port and protocol off it.
type PortError struct {
	Interface string
	Protocol  string
	Port      int32
}

func (e *PortError) Error() string {
	return fmt.Sprintf("cannot forward %s port %d", e.Protocol, e.Port)
}
