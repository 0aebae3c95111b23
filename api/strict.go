package api

import (
	"bytes"
	"cmp"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// kubevirtSchemaJSON lists the field names of KubeVirt's
// VirtualMachineInstance and VirtualMachine, the union of v0.53.2's and
// v1.9.0's (a KubeVirt 1.x virt-launcher hands its VMI to the hook
// sidecar), generated from their OpenAPI documents by
// gen_kubevirt_schema.go (see the file's "source").
//
//go:embed kubevirt_schema.json
var kubevirtSchemaJSON []byte

// kvSchema is kubevirt_schema.json: each type's fields, a field's value
// being "" (scalar), a type name, "[]X" (array of X), "{}X" (map of X) or
// "*" (free-form).
type kvSchema struct {
	Source string                       `json:"source"`
	Roots  map[string]string            `json:"roots"`
	Types  map[string]map[string]string `json:"types"`
}

// kubevirtSchema parses the embedded schema once; it is read-only after.
var kubevirtSchema = sync.OnceValue(func() *kvSchema {
	var s kvSchema
	if err := json.Unmarshal(kubevirtSchemaJSON, &s); err != nil {
		panic("api: embedded kubevirt_schema.json: " + err.Error())
	}
	return &s
})

// maxStrictErrors bounds the unknown and duplicate fields reported for one
// manifest; the rest are counted.
const maxStrictErrors = 50

// maxDepth bounds the nesting the strict walk follows (encoding/json's own
// limit).
const maxDepth = 10000

// A schema node is a position in the manifest as both KubeVirt's schema
// and virtnet's Go types see it. A field is known when either knows it:
// KubeVirt's schema covers every field a real manifest may carry (the ones
// virtnet ignores included), the Go types cover what virtnet models (some
// newer than v0.53, such as the passt binding).
type schemaNode struct {
	kv string       // KubeVirt type ref; "-" where KubeVirt's schema has nothing
	gt reflect.Type // Go type; nil where virtnet models nothing
}

var (
	rawMessageType = reflect.TypeOf(json.RawMessage(nil))
	anyType        = reflect.TypeOf((*any)(nil)).Elem()
)

func (n schemaNode) free() bool {
	return n.kv == "*" || n.gt == anyType || n.gt == rawMessageType
}

// child is the node of key in an object, and whether the key is known.
func (n schemaNode) child(key string) (schemaNode, bool) {
	if n.free() {
		return schemaNode{kv: "*"}, true
	}
	c := schemaNode{kv: "-"}
	kvKnown := false
	switch {
	case strings.HasPrefix(n.kv, "{}"):
		c.kv, kvKnown = n.kv[2:], true
	case n.kv != "-" && n.kv != "" && !strings.HasPrefix(n.kv, "[]"):
		if f, ok := kubevirtSchema().Types[n.kv][key]; ok {
			c.kv, kvKnown = f, true
		}
	}
	goKnown := false
	if t := deref(n.gt); t != nil {
		switch t.Kind() {
		case reflect.Map:
			c.gt, goKnown = t.Elem(), true
		case reflect.Struct:
			names, types := jsonFields(t)
			if i := slices.Index(names, key); i >= 0 {
				c.gt, goKnown = types[i], true
			}
		}
	}
	return c, kvKnown || goKnown
}

// elem is the node of an array's elements.
func (n schemaNode) elem() schemaNode {
	if n.free() {
		return schemaNode{kv: "*"}
	}
	c := schemaNode{kv: "-"}
	if strings.HasPrefix(n.kv, "[]") {
		c.kv = n.kv[2:]
	}
	if t := deref(n.gt); t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && t != rawMessageType {
		c.gt = t.Elem()
	}
	return c
}

// keys are the field names known at n (for suggestions).
func (n schemaNode) keys() []string {
	out := slices.Collect(maps.Keys(kubevirtSchema().Types[n.kv]))
	if t := deref(n.gt); t != nil && t.Kind() == reflect.Struct {
		names, _ := jsonFields(t)
		out = append(out, names...)
	}
	slices.Sort(out)
	return out
}

func deref(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// jsonName is a struct field's JSON name ("" for an embedded struct whose
// fields are inlined, "-" for a field JSON skips).
func jsonName(f reflect.StructField) string {
	tag, ok := f.Tag.Lookup("json")
	name, _, _ := strings.Cut(tag, ",")
	switch {
	case name == "-":
		return "-"
	case name != "":
		return name
	case f.Anonymous && (!ok || name == ""):
		return ""
	case !f.IsExported():
		return "-"
	}
	return f.Name
}

// jsonFields are the JSON names of t's fields and their types, in field
// order, those of an inlined embedded struct in its place.
func jsonFields(t reflect.Type) (names []string, types []reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		switch name := jsonName(f); name {
		case "-":
		case "":
			n, ts := jsonFields(deref(f.Type))
			names, types = append(names, n...), append(types, ts...)
		default:
			names, types = append(names, name), append(types, f.Type)
		}
	}
	return names, types
}

// strictWalk reads a JSON document token by token against a schema node
// and reports, by field path, every key that neither KubeVirt's schema nor
// virtnet's types know and every key given twice in one object; on the
// way it records the KubeVirt features virtnet does not render (see
// [VMI.Unsupported]).
type strictWalk struct {
	dec         *json.Decoder
	prefix      string // "spec" for a VMI, "spec.template.spec" for a VM
	errs        []error
	dropped     int
	unsupported []string
	// lenient accepts a key nobody knows (see [DecodeKubeVirt]) and
	// lists it in unknown, unless it differs from a known key in case
	// only.
	lenient bool
	unknown []string
}

func (w *strictWalk) fail(path, reason string) {
	if len(w.errs) >= maxStrictErrors {
		w.dropped++
		return
	}
	w.errs = append(w.errs, &FieldError{Path: path, Reason: reason})
}

// errors are the problems found, the dropped ones counted in a last one.
func (w *strictWalk) errors() []error {
	if w.dropped > 0 {
		return append(w.errs, &FieldError{Path: "(manifest)", Reason: fmt.Sprintf("%d more unknown, duplicate or mistyped fields not listed", w.dropped)})
	}
	return w.errs
}

// value walks one value at path; it reports whether the value is "empty"
// (null, false or an empty array), which is what an absent device list
// looks like.
func (w *strictWalk) value(n schemaNode, path string, depth int) (empty bool, err error) {
	if depth > maxDepth {
		return false, fmt.Errorf("%s: nested more than %d levels", path, maxDepth)
	}
	tok, err := w.dec.Token()
	if err != nil {
		return false, err
	}
	w.checkType(n, path, tok)
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			seen := map[string]bool{}
			for w.dec.More() {
				kt, err := w.dec.Token()
				if err != nil {
					return false, err
				}
				key, ok := kt.(string)
				if !ok {
					return false, fmt.Errorf("%s: object key %v is not a string", path, kt)
				}
				p := joinPath(path, key)
				if seen[key] {
					w.fail(p, "duplicate field (the API server refuses it; a decoder would keep the last)")
				}
				seen[key] = true
				c, known := n.child(key)
				if depth == 0 && key == "status" {
					// Written by KubeVirt, read by nobody here: whatever
					// a newer KubeVirt puts there is fine.
					c, known = schemaNode{kv: "*"}, true
				}
				if !known {
					if reason, caseOnly := unknownReason(n, key); w.lenient && !caseOnly {
						if len(w.unknown) < maxStrictErrors {
							w.unknown = append(w.unknown, p)
						}
					} else {
						w.fail(p, reason)
					}
					c = schemaNode{kv: "*"} // walk on for duplicates only
				}
				childEmpty, err := w.value(c, p, depth+1)
				if err != nil {
					return false, err
				}
				w.note(path, p, key, childEmpty)
			}
			_, err := w.dec.Token() // '}'
			return false, err
		case '[':
			i := 0
			for w.dec.More() {
				if _, err := w.value(n.elem(), path+"["+strconv.Itoa(i)+"]", depth+1); err != nil {
					return false, err
				}
				i++
			}
			_, err := w.dec.Token() // ']'
			return i == 0, err
		}
	case nil:
		return true, nil
	case bool:
		return !t, nil
	}
	return false, nil
}

// checkType reports a value whose JSON kind the Go type at n cannot hold
// (a string where a number goes, an object where a list goes, …), so that
// every such field comes back in one pass rather than the decoder's first
// alone. Where virtnet models nothing (n.gt nil) KubeVirt's schema has the
// last word and the value is not checked.
func (w *strictWalk) checkType(n schemaNode, path string, tok json.Token) {
	t := deref(n.gt)
	if t == nil || n.free() || tok == nil {
		return
	}
	var got string
	ok := true
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			got, ok = "an object", t.Kind() == reflect.Struct || t.Kind() == reflect.Map
		case '[':
			got, ok = "a list", t.Kind() == reflect.Slice || t.Kind() == reflect.Array
		default:
			return
		}
	case string:
		got, ok = "a string", t.Kind() == reflect.String
	case bool:
		got, ok = "a boolean", t.Kind() == reflect.Bool
	case json.Number:
		got = "a number"
		switch t.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			_, err := strconv.ParseInt(v.String(), 10, t.Bits())
			ok = err == nil
			got = "the number " + v.String()
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			_, err := strconv.ParseUint(v.String(), 10, t.Bits())
			ok = err == nil
			got = "the number " + v.String()
		case reflect.Float32, reflect.Float64:
		default:
			ok = false
		}
	}
	if ok {
		return
	}
	w.fail(path, fmt.Sprintf("wrong type: want %s, got %s", kindName(t), got))
}

// kindName is how a field error names the JSON kind of a Go type.
func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return fmt.Sprintf("an integer (%d-bit)", t.Bits())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprintf("a non-negative integer (%d-bit)", t.Bits())
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return t.String()
}

// note records an unsupported KubeVirt feature at path p (key under
// parent).
func (w *strictWalk) note(parent, p, key string, empty bool) {
	if parent == w.prefix+".domain" && slices.Contains(unsupportedDomainKeys(), key) ||
		parent == w.prefix+".domain.devices" && slices.Contains(unsupportedDeviceKeys(), key) && !empty ||
		strings.HasPrefix(parent, w.prefix+".volumes[") && !strings.Contains(parent[len(w.prefix)+len(".volumes["):], ".") &&
			!slices.Contains(supportedVolumeKeys(), key) {
		w.unsupported = append(w.unsupported, p)
	}
}

// orderUnsupported puts the unsupported features in a stable order: the
// domain's and the devices' in the order of their lists, then the volumes'
// by index and key.
func orderUnsupported(found []string, prefix string) []string {
	if len(found) == 0 {
		return nil
	}
	set := map[string]bool{}
	for _, p := range found {
		set[p] = true
	}
	var out []string
	for _, k := range unsupportedDomainKeys() {
		if p := prefix + ".domain." + k; set[p] {
			out = append(out, p)
		}
	}
	for _, k := range unsupportedDeviceKeys() {
		if p := prefix + ".domain.devices." + k; set[p] {
			out = append(out, p)
		}
	}
	type vol struct {
		index int
		path  string
	}
	var vols []vol
	for _, p := range found {
		rest, ok := strings.CutPrefix(p, prefix+".volumes[")
		if !ok {
			continue
		}
		i, _, _ := strings.Cut(rest, "]")
		n, _ := strconv.Atoi(i)
		vols = append(vols, vol{n, p})
	}
	slices.SortFunc(vols, func(a, b vol) int { return cmp.Or(cmp.Compare(a.index, b.index), strings.Compare(a.path, b.path)) })
	for _, v := range vols {
		out = append(out, v.path)
	}
	return out
}

// unknownReason says that key is unknown and, when a known key differs
// from it in case only (caseOnly), which one was meant.
func unknownReason(n schemaNode, key string) (reason string, caseOnly bool) {
	for _, k := range n.keys() {
		if strings.EqualFold(k, key) {
			return fmt.Sprintf("unknown field (field names are case-sensitive: did you mean %q?)", k), true
		}
	}
	return "unknown field (in neither KubeVirt's schema, v0.53.2 or v1.9.0, nor what virtnet reads)", false
}

// strictCheck walks js, rooted at root (prefix is the path of the VMI
// spec), and returns the unknown and duplicate fields and the unsupported
// features.
func strictCheck(js []byte, root schemaNode, prefix string, lenient bool) (errs []error, unsupported, unknown []string, err error) {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	w := &strictWalk{dec: dec, prefix: prefix, lenient: lenient}
	if _, err := w.value(root, "", 0); err != nil {
		return nil, nil, nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, nil, nil, fmt.Errorf("data after the document")
	}
	return w.errors(), orderUnsupported(w.unsupported, prefix), w.unknown, nil
}
