package binding

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/virtnet/virtnet/netdriver"
)

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

// Mark is the mark of the input's link of type typ.
func (in Input) Mark(typ string) string {
	return Mark(typ, in.VMI.Metadata.UID, in.Pair.Interface.Name)
}

// ErrPrepared is matched by the [*PodLinkError] of a pod link that phase1
// already prepared (its cache is gone): discovering it would record
// phase1's own changes as the CNI's.
var ErrPrepared = errors.New("already prepared by phase1 (its cache is gone: run phase1.Cleanup with that cache, or recreate the pod)")

// ownership is what a link found under one of phase1's names is to it.
type ownership int

const (
	ours ownership = iota
	// adoptable: unmarked and as phase1 creates it, in a resumed pair.
	adoptable
	foreign
)

// classify tells whether l, found under a name phase1 uses for a link of
// type typ, is phase1's. The reason explains a foreign link.
func classify(d netdriver.Driver, in Input, l *netdriver.Link, typ string) (ownership, string, error) {
	if l.Type != typ {
		return foreign, fmt.Sprintf("has type %s, want %s", l.Type, typ), nil
	}
	mark := in.Mark(typ)
	switch {
	case slices.Contains(l.AltNames, mark):
		return ours, "", nil
	case slices.ContainsFunc(l.AltNames, isMark):
		return foreign, fmt.Sprintf("phase1 made it for another VMI or interface (altnames %q, want %q)", l.AltNames, mark), nil
	case !in.Resumed:
		return foreign, fmt.Sprintf("not created by phase1 (no altname %q)", mark), nil
	}
	why, err := notAsCreated(d, in, l)
	if err != nil {
		return foreign, "", err
	}
	if why != "" {
		return foreign, fmt.Sprintf("not created by phase1 (no altname %q, and %s)", mark, why), nil
	}
	return adoptable, "", nil
}

// notAsCreated says how l differs from a link phase1 just created ("" when
// it does not).
func notAsCreated(d netdriver.Driver, in Input, l *netdriver.Link) (string, error) {
	switch {
	case l.Up:
		return "it is up", nil
	case l.Master != "":
		return "it is a port of " + l.Master, nil
	case l.Type == netdriver.TypeTuntap && (l.TapOwner != in.TapOwner || l.TapGroup != in.TapOwner):
		return fmt.Sprintf("it is owned by %d:%d", l.TapOwner, l.TapGroup), nil
	}
	for _, fam := range []netdriver.Family{netdriver.IPv4, netdriver.IPv6} {
		addrs, err := d.AddrList(l.Name, fam)
		if err != nil {
			return "", err
		}
		if len(addrs) > 0 {
			return "it has address " + addrs[0].String(), nil
		}
	}
	if l.Type == netdriver.TypeBridge {
		links, err := d.LinkList()
		if err != nil {
			return "", err
		}
		for _, o := range links {
			if o.Master == l.Name {
				return "it has port " + o.Name, nil
			}
		}
	}
	return "", nil
}

// own checks a link found under one of phase1's names, marking it when it
// is an unmarked link as phase1 creates it in a resumed pair.
func own(d netdriver.Driver, in Input, l *netdriver.Link, typ string) error {
	o, why, err := classify(d, in, l, typ)
	switch {
	case err != nil:
		return err
	case o == foreign:
		return &ForeignLinkError{Name: l.Name, Type: l.Type, Want: typ, Reason: why}
	case o == adoptable:
		in.Logger.Info("marking a link an interrupted run created", "link", l.Name)
		if err := d.AddAltName(l.Name, in.Mark(typ)); err != nil {
			return err
		}
		l.AltNames = append(l.AltNames, in.Mark(typ))
	}
	return nil
}

// create runs add, then marks the new link of type typ; if marking fails
// the link is deleted again, so that no unmarked link of this run stays
// behind.
func create(d netdriver.Driver, in Input, name, typ string, add func() error) (*netdriver.Link, error) {
	if err := add(); err != nil {
		return nil, err
	}
	if err := d.AddAltName(name, in.Mark(typ)); err != nil {
		if derr := d.DeleteLink(name); derr != nil {
			return nil, errors.Join(err, fmt.Errorf("delete unmarked %s: %w", name, derr))
		}
		return nil, err
	}
	return d.LinkByName(name)
}

// Preflight checks, before Prepare changes anything, that each named link
// is either absent or phase1's for this interface with the given type
// (see [Mark]), so that a foreign link is refused with nothing
// half-applied. Names are checked in order.
func Preflight(d netdriver.Driver, in Input, want map[string]string) error {
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		l, err := Lookup(d, name)
		if err != nil {
			return err
		}
		if l == nil {
			continue
		}
		o, why, err := classify(d, in, l, want[name])
		if err != nil {
			return err
		}
		if o == foreign {
			return &ForeignLinkError{Name: name, Type: l.Type, Want: want[name], Reason: why}
		}
	}
	return nil
}

// EnsureDummy makes phase1's dummy named name (`ip link add NAME type
// dummy`, marked) or checks that the one there is phase1's.
func EnsureDummy(d netdriver.Driver, in Input, name string) (*netdriver.Link, error) {
	l, err := Lookup(d, name)
	if err != nil {
		return nil, err
	}
	if l == nil {
		return create(d, in, name, netdriver.TypeDummy, func() error { return d.AddDummy(name) })
	}
	return l, own(d, in, l, netdriver.TypeDummy)
}

// DeleteOwned deletes a link if it is phase1's for this interface with
// type typ (see [Mark]); any other link under that name is left alone.
func DeleteOwned(d netdriver.Driver, in Input, name, typ string) error {
	l, err := Lookup(d, name)
	if err != nil || l == nil {
		return err
	}
	o, why, err := classify(d, in, l, typ)
	if err != nil {
		return err
	}
	if o == foreign {
		in.Logger.Warn("leaving a link phase1 did not create", "link", name, "reason", why)
		return nil
	}
	return d.DeleteLink(name)
}

func isMark(alt string) bool { return strings.HasPrefix(alt, MarkPrefix) }

// isMarked reports whether phase1 (for any VMI) marked l.
func isMarked(l *netdriver.Link) bool { return slices.ContainsFunc(l.AltNames, isMark) }

// checkNotPrepared refuses a pod link that phase1 already prepared: one
// that carries a mark, is a port of a k6t- or marked bridge, or has one of
// phase1's marked links (bridge, tap) or any link under the names in
// others (the bridge binding's renamed NIC) next to it.
func checkNotPrepared(d netdriver.Driver, in Input, l *netdriver.Link, others ...string) error {
	fail := func(format string, args ...any) error {
		return &PodLinkError{Name: l.Name, Reason: fmt.Sprintf(format, args...), Err: ErrPrepared}
	}
	if isMarked(l) {
		return fail("carries phase1's mark (altnames %q)", l.AltNames)
	}
	if l.Master != "" {
		if strings.HasPrefix(l.Master, "k6t-") {
			return fail("is a port of bridge %s", l.Master)
		}
		m, err := Lookup(d, l.Master)
		if err != nil {
			return err
		}
		if m != nil && isMarked(m) {
			return fail("is a port of phase1's bridge %s", l.Master)
		}
	}
	for _, n := range []string{in.Names.Bridge, in.Names.Tap} {
		o, err := Lookup(d, n)
		if err != nil {
			return err
		}
		if o != nil && isMarked(o) {
			return fail("phase1's %s %s (altnames %q) is next to it", o.Type, n, o.AltNames)
		}
	}
	for _, n := range others {
		o, err := Lookup(d, n)
		if err != nil {
			return err
		}
		if o != nil {
			return fail("%s %s, the name phase1 renames it to, exists next to it", o.Type, n)
		}
	}
	return nil
}
