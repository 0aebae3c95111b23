package kvplugin

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/internal/names"
)

// RecordVersion is the version of the hand-off record this build writes.
// A build reads its own version and the one before it
// ([MinRecordVersion]), so that during a node-by-node upgrade a new
// sidecar reads what a not yet upgraded CNI plugin wrote (upgrade the
// sidecar images, then the CNI DaemonSet). The record is protobuf: a field
// added to it is read as absent by the older build and needs no new
// version; a version is for a change an older build would misread. When
// it is raised, MinRecordVersion becomes the old value and the old
// version's records stay in testdata (TestReadsPreviousRecordVersion).
const RecordVersion = 1

// MinRecordVersion is the oldest hand-off record version this build reads.
const MinRecordVersion = 1

// MaxAlias is the longest link alias the kernel keeps (IFALIASZ - 1).
const MaxAlias = 255

const prefix = "virtnet/v"

// ErrForeignRecord is returned for an alias virtnet did not write.
var ErrForeignRecord = errors.New("link alias is not a virtnet hand-off record")

// ErrNoLink is returned when the link that should hold a record is not in
// the namespace.
var ErrNoLink = errors.New("link not found")

// ErrCorrupt is wrapped for a record with virtnet's prefix that does not
// decode or holds an invalid value.
var ErrCorrupt = errors.New("hand-off record is corrupt")

// ErrRecordVersion is wrapped for a record of a version this build does
// not read; the message names that version and the ones this build reads.
var ErrRecordVersion = errors.New("hand-off record version")

// ErrRecordMismatch is wrapped for a record about another binding or pod
// interface than the one asked for; the message names the field, the
// record's value and the one expected.
var ErrRecordMismatch = errors.New("hand-off record is for another interface")

// ErrRecordTooLarge is wrapped for a record that does not fit in a link
// alias; the message names its size (and, from [Encode], its routes:
// what makes it grow).
var ErrRecordTooLarge = errors.New("hand-off record is too large")

// RecordSource is a decoded record and the link it was read from.
type RecordSource struct {
	Link   string
	Record *cache.Interface
}

// Encode turns phase1's interface record into a link alias.
func Encode(rec *cache.Interface) (string, error) {
	r := &wireRecord{
		Binding:      rec.Binding,
		PodInterface: rec.PodInterface,
		Mtu:          uint32(max(rec.MTU, 0)),
		Queues:       uint32(max(rec.Queues, 0)),
		IpamDisabled: rec.IPAMDisabled,
		Nic:          rec.NIC != "",
	}
	r.Mac = rec.MAC.HardwareAddr()
	r.Ipv4, r.Ipv6 = prefixOf(rec.IPv4), prefixOf(rec.IPv6)
	r.Gateway, r.GatewayIPv6 = addrOf(rec.Gateway), addrOf(rec.GatewayIPv6)
	r.ServerIPv4, r.ServerIPv6 = addrOf(rec.ServerIPv4), addrOf(rec.ServerIPv6)
	for _, rt := range rec.Routes {
		r.Routes = append(r.Routes, &wireRoute{Dst: prefixOf(rt.Dst), Gateway: addrOf(rt.Gateway), Metric: uint32(max(rt.Metric, 0))})
	}
	b := r.marshal()
	s := prefix + strconv.Itoa(RecordVersion) + " " + base64.RawStdEncoding.EncodeToString(b)
	if len(s) > MaxAlias {
		return "", fmt.Errorf("%w: %d bytes (%d routes), a link alias holds %d", ErrRecordTooLarge, len(s), len(rec.Routes), MaxAlias)
	}
	return s, nil
}

// Decode reads a link alias back into the interface record phase2 and the
// DHCP server use, checking that it is about binding on podIface. Link
// names come from internal/names, as phase1 derived them (primary as in
// [ReadRecord]).
func Decode(alias, binding, podIface string, primary bool) (*cache.Interface, error) {
	rest, ok := strings.CutPrefix(alias, prefix)
	if !ok {
		return nil, ErrForeignRecord
	}
	ver, body, ok := strings.Cut(rest, " ")
	v, err := strconv.Atoi(ver)
	if !ok || err != nil {
		return nil, ErrForeignRecord
	}
	if v < MinRecordVersion || v > RecordVersion {
		reads := strconv.Itoa(RecordVersion)
		if MinRecordVersion < RecordVersion {
			reads = strconv.Itoa(MinRecordVersion) + " to " + reads
		}
		return nil, fmt.Errorf("%w %d, this build reads %s: the CNI plugin and the sidecar must be at most one release apart", ErrRecordVersion, v, reads)
	}
	b, err := base64.RawStdEncoding.DecodeString(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	var r wireRecord
	if err := r.unmarshal(b); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if r.Binding != binding {
		return nil, fmt.Errorf("%w: binding %q, expected %q", ErrRecordMismatch, r.Binding, binding)
	}
	if r.PodInterface != podIface {
		return nil, fmt.Errorf("%w: pod interface %q, expected %q", ErrRecordMismatch, r.PodInterface, podIface)
	}
	links := names.For(podIface, primary)
	rec := &cache.Interface{
		Version:      1,
		PodInterface: podIface,
		Binding:      binding,
		Bridge:       links.Bridge,
		Tap:          links.Tap,
		MTU:          int(r.Mtu),
		Queues:       int(r.Queues),
		IPAMDisabled: r.IpamDisabled,
	}
	if r.Nic {
		rec.NIC = links.NIC
	}
	if len(r.Mac) > 0 {
		if len(r.Mac) != 6 {
			return nil, fmt.Errorf("%w: mac: %d bytes", ErrCorrupt, len(r.Mac))
		}
		rec.MAC, _ = cache.MACFrom(r.Mac)
	}
	if rec.MTU > 65535 || rec.Queues > 256 {
		return nil, fmt.Errorf("%w: mtu %d, queues %d: out of range", ErrCorrupt, rec.MTU, rec.Queues)
	}
	if rec.IPv4, err = prefixFrom("ipv4", r.Ipv4, true); err != nil {
		return nil, err
	}
	if rec.IPv6, err = prefixFrom("ipv6", r.Ipv6, false); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name string
		b    []byte
		v4   bool
		dst  *netip.Addr
	}{
		{"gateway", r.Gateway, true, &rec.Gateway},
		{"gatewayIPv6", r.GatewayIPv6, false, &rec.GatewayIPv6},
		{"serverIPv4", r.ServerIPv4, true, &rec.ServerIPv4},
		{"serverIPv6", r.ServerIPv6, false, &rec.ServerIPv6},
	} {
		if *f.dst, err = addrFrom(f.name, f.b, f.v4); err != nil {
			return nil, err
		}
	}
	for i, rt := range r.Routes {
		if rt.Dst == nil {
			return nil, fmt.Errorf("%w: routes[%d]: no destination", ErrCorrupt, i)
		}
		v4 := len(rt.Dst.Addr) == 4
		dst, err := prefixFrom(fmt.Sprintf("routes[%d].dst", i), rt.Dst, v4)
		if err != nil {
			return nil, err
		}
		gw, err := addrFrom(fmt.Sprintf("routes[%d].gateway", i), rt.Gateway, v4)
		if err != nil {
			return nil, err
		}
		rec.Routes = append(rec.Routes, cache.Route{Dst: dst, Gateway: gw, Metric: int(rt.Metric)})
	}
	return rec, nil
}

func prefixOf(p netip.Prefix) *wirePrefix {
	if !p.IsValid() {
		return nil
	}
	return &wirePrefix{Addr: p.Addr().AsSlice(), Bits: uint32(p.Bits())}
}

func addrOf(a netip.Addr) []byte {
	if !a.IsValid() {
		return nil
	}
	return a.AsSlice()
}

func prefixFrom(field string, p *wirePrefix, v4 bool) (netip.Prefix, error) {
	if p == nil {
		return netip.Prefix{}, nil
	}
	a, err := addrFrom(field, p.Addr, v4)
	if err != nil {
		return netip.Prefix{}, err
	}
	if !a.IsValid() {
		return netip.Prefix{}, fmt.Errorf("%w: %s: no address", ErrCorrupt, field)
	}
	if int(p.Bits) > a.BitLen() {
		return netip.Prefix{}, fmt.Errorf("%w: %s: /%d", ErrCorrupt, field, p.Bits)
	}
	return netip.PrefixFrom(a, int(p.Bits)), nil
}

func addrFrom(field string, b []byte, v4 bool) (netip.Addr, error) {
	if len(b) == 0 {
		return netip.Addr{}, nil
	}
	want := 16
	if v4 {
		want = 4
	}
	a, ok := netip.AddrFromSlice(b)
	if !ok || len(b) != want {
		return netip.Addr{}, fmt.Errorf("%w: %s: %d bytes, want %d", ErrCorrupt, field, len(b), want)
	}
	return a, nil
}
