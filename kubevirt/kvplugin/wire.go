package kvplugin

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// The hand-off record's protobuf encoding, written out: the schema is
// kubevirt/hookapi/handoff/handoff.proto, and TestWireMatchesProtobuf
// checks both directions against the generated code and the protobuf
// library. The CNI plugin encodes a record at every ADD; the generated
// code would make it import the protobuf runtime, whose package
// initialisation (descriptor registration) every CNI process pays
// (docs/cni-startup.md).

// wireRecord is handoff.Record.
type wireRecord struct {
	Binding      string // 1
	PodInterface string // 2
	Mac          []byte // 3
	Mtu          uint32 // 4
	Queues       uint32 // 5
	IpamDisabled bool   // 6
	Ipv4         *wirePrefix
	Ipv6         *wirePrefix
	Gateway      []byte // 9
	GatewayIPv6  []byte // 10
	ServerIPv4   []byte // 11
	ServerIPv6   []byte // 12
	Routes       []*wireRoute
	Nic          bool // 14
}

// wirePrefix is handoff.Prefix.
type wirePrefix struct {
	Addr []byte // 1
	Bits uint32 // 2
}

// wireRoute is handoff.Route.
type wireRoute struct {
	Dst     *wirePrefix // 1
	Gateway []byte      // 2
	Metric  uint32      // 3
}

const (
	wireVarint = 0
	wireI64    = 1
	wireBytes  = 2
	wireI32    = 5
)

func appendTag(b []byte, field, typ int) []byte {
	return binary.AppendUvarint(b, uint64(field)<<3|uint64(typ))
}

// proto3: zero scalars and empty strings and bytes are not written.
func appendVarint(b []byte, field int, v uint64) []byte {
	if v == 0 {
		return b
	}
	return binary.AppendUvarint(appendTag(b, field, wireVarint), v)
}

func appendBytes(b []byte, field int, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	return append(binary.AppendUvarint(appendTag(b, field, wireBytes), uint64(len(v))), v...)
}

// appendMessage writes a set sub-message, even an empty one.
func appendMessage(b []byte, field int, m []byte) []byte {
	return append(binary.AppendUvarint(appendTag(b, field, wireBytes), uint64(len(m))), m...)
}

func boolVarint(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}

func (p *wirePrefix) marshal() []byte {
	return appendVarint(appendBytes(nil, 1, p.Addr), 2, uint64(p.Bits))
}

func (r *wireRoute) marshal() []byte {
	var b []byte
	if r.Dst != nil {
		b = appendMessage(b, 1, r.Dst.marshal())
	}
	return appendVarint(appendBytes(b, 2, r.Gateway), 3, uint64(r.Metric))
}

// marshal is proto.MarshalOptions{Deterministic: true}.Marshal: fields in
// number order.
func (r *wireRecord) marshal() []byte {
	b := appendBytes(nil, 1, []byte(r.Binding))
	b = appendBytes(b, 2, []byte(r.PodInterface))
	b = appendBytes(b, 3, r.Mac)
	b = appendVarint(b, 4, uint64(r.Mtu))
	b = appendVarint(b, 5, uint64(r.Queues))
	b = appendVarint(b, 6, boolVarint(r.IpamDisabled))
	if r.Ipv4 != nil {
		b = appendMessage(b, 7, r.Ipv4.marshal())
	}
	if r.Ipv6 != nil {
		b = appendMessage(b, 8, r.Ipv6.marshal())
	}
	b = appendBytes(b, 9, r.Gateway)
	b = appendBytes(b, 10, r.GatewayIPv6)
	b = appendBytes(b, 11, r.ServerIPv4)
	b = appendBytes(b, 12, r.ServerIPv6)
	for _, rt := range r.Routes {
		b = appendMessage(b, 13, rt.marshal())
	}
	return appendVarint(b, 14, boolVarint(r.Nic))
}

var errTruncated = errors.New("truncated protobuf field")

// fields calls f for each field of the message b: its number and its
// value (varint) or contents (length-delimited). The numbers in varints
// are the message's varint fields, every other number length-delimited: a
// field of another wire type is skipped, as the protobuf library treats it
// as unknown. Fixed-size fields, which the schema has none of, are
// skipped.
func fields(b []byte, varints []int, f func(num int, v uint64, data []byte) error) error {
	for len(b) > 0 {
		tag, n := binary.Uvarint(b)
		if n <= 0 || tag>>3 == 0 || tag>>3 > 1<<29-1 {
			return errors.New("bad protobuf tag")
		}
		b = b[n:]
		num, typ := int(tag>>3), int(tag&7)
		var v uint64
		var data []byte
		switch typ {
		case wireVarint:
			if v, n = binary.Uvarint(b); n <= 0 {
				return errTruncated
			}
			b = b[n:]
		case wireBytes:
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return errTruncated
			}
			data, b = b[n:n+int(l)], b[n+int(l):]
		case wireI64, wireI32:
			size := 8
			if typ == wireI32 {
				size = 4
			}
			if len(b) < size {
				return errTruncated
			}
			b = b[size:]
			continue
		default:
			return fmt.Errorf("protobuf wire type %d", typ)
		}
		if (typ == wireVarint) != slices.Contains(varints, num) {
			continue
		}
		if err := f(num, v, data); err != nil {
			return err
		}
	}
	return nil
}

// unmarshalPrefix decodes data into *p, made if nil.
func unmarshalPrefix(p **wirePrefix, data []byte) error {
	if *p == nil {
		*p = &wirePrefix{}
	}
	return (*p).unmarshal(data)
}

func (p *wirePrefix) unmarshal(b []byte) error {
	return fields(b, []int{2}, func(num int, v uint64, data []byte) error {
		switch num {
		case 1:
			p.Addr = clone(data)
		case 2:
			p.Bits = uint32(v)
		}
		return nil
	})
}

func (r *wireRoute) unmarshal(b []byte) error {
	return fields(b, []int{3}, func(num int, v uint64, data []byte) error {
		switch num {
		case 1:
			return unmarshalPrefix(&r.Dst, data)
		case 2:
			r.Gateway = clone(data)
		case 3:
			r.Metric = uint32(v)
		}
		return nil
	})
}

// unmarshal is proto.Unmarshal into a handoff.Record.
func (r *wireRecord) unmarshal(b []byte) error {
	return fields(b, []int{4, 5, 6, 14}, func(num int, v uint64, data []byte) error {
		switch num {
		case 1:
			r.Binding = string(data)
		case 2:
			r.PodInterface = string(data)
		case 3:
			r.Mac = clone(data)
		case 4:
			r.Mtu = uint32(v)
		case 5:
			r.Queues = uint32(v)
		case 6:
			r.IpamDisabled = v != 0
		case 7:
			return unmarshalPrefix(&r.Ipv4, data)
		case 8:
			return unmarshalPrefix(&r.Ipv6, data)
		case 9:
			r.Gateway = clone(data)
		case 10:
			r.GatewayIPv6 = clone(data)
		case 11:
			r.ServerIPv4 = clone(data)
		case 12:
			r.ServerIPv6 = clone(data)
		case 13:
			rt := &wireRoute{}
			if err := rt.unmarshal(data); err != nil {
				return err
			}
			r.Routes = append(r.Routes, rt)
		case 14:
			r.Nic = v != 0
		}
		return nil
	})
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }
