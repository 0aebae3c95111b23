package api

import (
	"bytes"
	"cmp"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
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

// maxPathLen bounds a field path as an error or a list names it: a
// longer one (a deep or long-keyed manifest) keeps its first and last
// maxPathLen/2 bytes around the count of bytes left out, so that what a
// decode returns stays bounded whatever the manifest's shape.
const maxPathLen = 1 << 10

// A schema node is a position in the manifest as both KubeVirt's schema
// and virtnet's Go types see it. A field is known when either knows it:
// KubeVirt's schema covers every field a real manifest may carry (the ones
// virtnet ignores included), the Go types cover what virtnet models (some
// newer than v0.53, such as the passt binding).
type schemaNode struct {
	kv string       // KubeVirt type ref; "-" where KubeVirt's schema has nothing
	gt reflect.Type // Go type; nil where virtnet models nothing
	// open accepts any key, at any depth, without listing it (status,
	// which KubeVirt writes); the fields virtnet models keep their type.
	open bool
}

var (
	rawMessageType = reflect.TypeOf(json.RawMessage(nil))
	anyType        = reflect.TypeOf((*any)(nil)).Elem()
)

func (n schemaNode) free() bool {
	return n.kv == "*" || n.gt == anyType || n.gt == rawMessageType
}

// fieldSet is the JSON fields of a Go struct type (see [jsonFields]),
// indexed by name.
type fieldSet struct {
	names []string
	types []reflect.Type
	index map[string]int
}

// fields is t's fieldSet, made once per walk.
func (w *strictWalk) fields(t reflect.Type) *fieldSet {
	if fs, ok := w.fieldSets[t]; ok {
		return fs
	}
	names, types := jsonFields(t)
	fs := &fieldSet{names: names, types: types, index: make(map[string]int, len(names))}
	for i, n := range names {
		if _, ok := fs.index[n]; !ok {
			fs.index[n] = i
		}
	}
	if w.fieldSets == nil {
		w.fieldSets = map[reflect.Type]*fieldSet{}
	}
	w.fieldSets[t] = fs
	return fs
}

// child is the node of key in an object at n, and whether the key is
// known.
func (w *strictWalk) child(n schemaNode, key string) (schemaNode, bool) {
	if n.free() {
		return schemaNode{kv: "*"}, true
	}
	c := schemaNode{kv: "-", open: n.open}
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
			fs := w.fields(t)
			if i, ok := fs.index[key]; ok {
				c.gt, goKnown = fs.types[i], true
			}
		}
	}
	return c, kvKnown || goKnown || n.open
}

// elem is the node of an array's elements.
func (n schemaNode) elem() schemaNode {
	if n.free() {
		return schemaNode{kv: "*"}
	}
	c := schemaNode{kv: "-", open: n.open}
	if strings.HasPrefix(n.kv, "[]") {
		c.kv = n.kv[2:]
	}
	if t := deref(n.gt); t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && t != rawMessageType {
		c.gt = t.Elem()
	}
	return c
}

// caseMatch is the known field name at n that differs from key in case
// only (the least, when several do), if any.
func (w *strictWalk) caseMatch(n schemaNode, key string) (string, bool) {
	best, found := "", false
	consider := func(k string) {
		if k != key && strings.EqualFold(k, key) && (!found || k < best) {
			best, found = k, true
		}
	}
	for k := range kubevirtSchema().Types[n.kv] {
		consider(k)
	}
	if t := deref(n.gt); t != nil && t.Kind() == reflect.Struct {
		for _, k := range w.fields(t).names {
			consider(k)
		}
	}
	return best, found
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
//
// Its cost is linear in the document whatever the document's shape: the
// path of the value being walked is one buffer, cut back and appended to
// as the walk goes down and up (a string per level would cost the square
// of the depth), it becomes a string only for what is reported (bounded,
// see [maxStrictErrors] and [maxPathLen]), an object's keys are kept only
// from its second key on, and a Go type's fields are listed once.
type strictWalk struct {
	dec    *jsontext.Decoder
	prefix string // "spec" for a VMI, "spec.template.spec" for a VM
	// domainPath, devicesPath and volumesPath are prefix's
	// ".domain", ".domain.devices" and ".volumes[".
	domainPath, devicesPath, volumesPath string
	path                                 []byte // of the value being walked
	fieldSets                            map[reflect.Type]*fieldSet
	errs                                 []error
	dropped                              int
	unsupported                          []string
	// lenient accepts a key nobody knows (see [DecodeKubeVirt]) and
	// lists it in unknown, unless it differs from a known key in case
	// only.
	lenient bool
	unknown []string
}

// room reports whether one more error is listed; it counts the one that
// is not. A caller builds the reason only when there is room.
func (w *strictWalk) room() bool {
	if len(w.errs) >= maxStrictErrors {
		w.dropped++
		return false
	}
	return true
}

// fail reports the value being walked; see room.
func (w *strictWalk) fail(reason string) {
	w.errs = append(w.errs, &FieldError{Path: shortPath(w.path), Reason: reason})
}

// shortPath is path as a string of at most about maxPathLen bytes.
func shortPath(path []byte) string {
	if len(path) <= maxPathLen {
		return string(path)
	}
	i := maxPathLen / 2
	for i > 0 && !utf8.RuneStart(path[i]) {
		i--
	}
	j := len(path) - maxPathLen/2
	for j < len(path) && !utf8.RuneStart(path[j]) {
		j++
	}
	return fmt.Sprintf("%s…(%d bytes)…%s", path[:i], j-i, path[j:])
}

// errors are the problems found, the dropped ones counted in a last one.
func (w *strictWalk) errors() []error {
	if w.dropped > 0 {
		return append(w.errs, &FieldError{Path: "(manifest)", Reason: fmt.Sprintf("%d more unknown, duplicate or mistyped fields not listed", w.dropped)})
	}
	return w.errs
}

// value walks one value, at w.path; it reports whether the value is
// "empty" (null, false or an empty array), which is what an absent device
// list looks like.
func (w *strictWalk) value(n schemaNode, depth int) (empty bool, err error) {
	if depth > maxDepth {
		return false, fmt.Errorf("%s: nested more than %d levels", shortPath(w.path), maxDepth)
	}
	tok, err := w.dec.ReadToken()
	if err != nil {
		return false, err
	}
	w.checkType(n, tok)
	base := len(w.path)
	defer func() { w.path = w.path[:base] }()
	switch tok.Kind() {
	case '{':
		// The keys seen, once there are two (most objects of a deep
		// manifest have one).
		var first string
		var seen map[string]struct{}
		for i := 0; w.dec.PeekKind() != '}'; i++ {
			kt, err := w.dec.ReadToken()
			if err != nil {
				return false, err
			}
			if kt.Kind() != '"' {
				return false, fmt.Errorf("%s: object key %v is not a string", shortPath(w.path[:base]), kt)
			}
			key := kt.String()
			w.path = growPath(w.path[:base], 1+len(key))
			if base > 0 {
				w.path = append(w.path, '.')
			}
			w.path = append(w.path, key...)
			dup := false
			switch i {
			case 0:
				first = key
			case 1:
				seen = map[string]struct{}{first: {}}
				fallthrough
			default:
				if _, dup = seen[key]; !dup {
					seen[key] = struct{}{}
				}
			}
			if dup && w.room() {
				w.fail("duplicate field (the API server refuses it; a decoder would keep the last)")
			}
			c, known := w.child(n, key)
			if depth == 0 && key == "status" {
				// Written by KubeVirt: whatever a newer KubeVirt
				// puts there is fine, the fields virtnet reads
				// keep their type.
				c, known = schemaNode{kv: "-", gt: c.gt, open: true}, true
			}
			if !known {
				w.unknownKey(n, key)
				c = schemaNode{kv: "*"} // walk on for duplicates only
			}
			childEmpty, err := w.value(c, depth+1)
			if err != nil {
				return false, err
			}
			if !dup {
				w.note(base, key, childEmpty)
			}
		}
		_, err := w.dec.ReadToken() // '}'
		return false, err
	case '[':
		i := 0
		for ; w.dec.PeekKind() != ']'; i++ {
			w.path = growPath(w.path[:base], 22)
			w.path = append(w.path, '[')
			w.path = strconv.AppendInt(w.path, int64(i), 10)
			w.path = append(w.path, ']')
			if _, err := w.value(n.elem(), depth+1); err != nil {
				return false, err
			}
		}
		_, err := w.dec.ReadToken() // ']'
		return i == 0, err
	case 'n', 'f':
		return true, nil
	}
	return false, nil
}

// unknownKey reports key, at w.path, which n does not know: an error,
// unless the walk is lenient and no known key differs from it in case
// only.
func (w *strictWalk) unknownKey(n schemaNode, key string) {
	meant, caseOnly := w.caseMatch(n, key)
	switch {
	case caseOnly:
		if w.room() {
			w.fail(fmt.Sprintf("unknown field (field names are case-sensitive: did you mean %q?)", meant))
		}
	case !w.lenient:
		if w.room() {
			w.fail("unknown field (in neither KubeVirt's schema, v0.53.2 or v1.9.0, nor what virtnet reads)")
		}
	case len(w.unknown) < maxStrictErrors:
		w.unknown = append(w.unknown, shortPath(w.path))
	}
}

// checkType reports a value whose JSON kind the Go type at n cannot hold
// (a string where a number goes, an object where a list goes, …), so that
// every such field comes back in one pass rather than the decoder's first
// alone. Where virtnet models nothing (n.gt nil) KubeVirt's schema has the
// last word and the value is not checked.
func (w *strictWalk) checkType(n schemaNode, tok jsontext.Token) {
	t := deref(n.gt)
	if t == nil || n.free() || tok.Kind() == 'n' {
		return
	}
	var got string
	ok := true
	switch tok.Kind() {
	case '{':
		got, ok = "an object", t.Kind() == reflect.Struct || t.Kind() == reflect.Map
	case '[':
		got, ok = "a list", t.Kind() == reflect.Slice || t.Kind() == reflect.Array
	case '"':
		got, ok = "a string", t.Kind() == reflect.String
	case 't', 'f':
		got, ok = "a boolean", t.Kind() == reflect.Bool
	case '0':
		got = "a number"
		switch t.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			if _, err := strconv.ParseInt(tok.String(), 10, t.Bits()); err != nil {
				ok, got = false, "the number "+tok.String()
			}
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			if _, err := strconv.ParseUint(tok.String(), 10, t.Bits()); err != nil {
				ok, got = false, "the number "+tok.String()
			}
		case reflect.Float32, reflect.Float64:
		default:
			ok = false
		}
	default:
		return
	}
	if ok || !w.room() {
		return
	}
	w.fail(fmt.Sprintf("wrong type: want %s, got %s", kindName(t), got))
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

// note records an unsupported KubeVirt feature: key, at w.path, under
// the object at w.path[:base] (each key of an object once).
func (w *strictWalk) note(base int, key string, empty bool) {
	parent := w.path[:base]
	var unsupported bool
	switch {
	case string(parent) == w.domainPath:
		unsupported = slices.Contains(unsupportedDomainKeys(), key)
	case string(parent) == w.devicesPath:
		unsupported = !empty && slices.Contains(unsupportedDeviceKeys(), key)
	case bytes.HasPrefix(parent, []byte(w.volumesPath)):
		unsupported = bytes.IndexByte(parent[len(w.volumesPath):], '.') < 0 && !slices.Contains(supportedVolumeKeys(), key)
	}
	if unsupported {
		w.unsupported = append(w.unsupported, shortPath(w.path))
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

// strictCheck walks js, rooted at root (prefix is the path of the VMI
// spec), and returns the unknown and duplicate fields and the unsupported
// features.
func strictCheck(js []byte, root schemaNode, prefix string, lenient bool) (errs []error, unsupported, unknown []string, err error) {
	// Duplicates are the walk's to report; invalid UTF-8 is replaced, as
	// the decoder replaces it.
	dec := jsontext.NewDecoder(bytes.NewBuffer(js), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	w := &strictWalk{dec: dec, prefix: prefix, lenient: lenient,
		domainPath: prefix + ".domain", devicesPath: prefix + ".domain.devices", volumesPath: prefix + ".volumes["}
	if _, err := w.value(root, 0); err != nil {
		return nil, nil, nil, err
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		return nil, nil, nil, fmt.Errorf("data after the document")
	}
	return w.errors(), orderUnsupported(w.unsupported, prefix), w.unknown, nil
}
