package domxml_test

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
)

// node is one XML element, namespace prefixes dropped.
type node struct {
	name     string
	attrs    map[string]string
	text     string
	children []*node
}

// parseXML reads a document into a tree; comments, processing
// instructions and xmlns declarations are dropped, text is trimmed.
func parseXML(data []byte) (*node, error) {
	dec := xml.NewDecoder(bytes.NewReader(data))
	var stack []*node
	var root *node
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			n := &node{name: t.Name.Local, attrs: map[string]string{}}
			for _, a := range t.Attr {
				if a.Name.Space == "xmlns" || a.Name.Local == "xmlns" {
					continue
				}
				n.attrs[a.Name.Local] = a.Value
			}
			if len(stack) > 0 {
				p := stack[len(stack)-1]
				p.children = append(p.children, n)
			} else {
				root = n
			}
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text += strings.TrimSpace(string(t))
			}
		}
	}
	if root == nil {
		return nil, fmt.Errorf("no root element")
	}
	return root, nil
}

// empty reports an element that carries nothing: KubeVirt's schema
// marshals unset structs as such (<bios></bios>, <source></source>).
func (n *node) empty() bool { return len(n.attrs) == 0 && n.text == "" && len(n.children) == 0 }

// prunable are the elements KubeVirt's schema writes empty for an unset
// struct, which mean nothing to libvirt when empty. Other empty elements
// (<acpi/>, <smm/>, <hugepages/>) carry meaning and are kept.
var prunable = map[string]bool{"bios": true, "baseBoard": true, "chassis": true, "source": true, "system": true}

// prune removes empty prunable elements, bottom up.
func (n *node) prune() {
	kept := n.children[:0]
	for _, c := range n.children {
		c.prune()
		if !c.empty() || !prunable[c.name] {
			kept = append(kept, c)
		}
	}
	n.children = kept
}

// child is the first child named name.
func (n *node) child(name string) *node {
	for _, c := range n.children {
		if c.name == name {
			return c
		}
	}
	return nil
}

// key identifies an element among its siblings of the same name so that
// element order does not matter: the alias of a device, the type and index
// of a controller, the name of an entry, timer or feature, the port of a
// serial or console, the vCPU of a pin. Other repeated elements are keyed
// by position.
func (n *node) key() string {
	switch n.name {
	case "disk", "interface", "hostdev":
		if a := n.child("alias"); a != nil {
			return a.attrs["name"]
		}
		if t := n.child("target"); t != nil {
			return t.attrs["dev"]
		}
	case "controller":
		return n.attrs["type"] + "/" + n.attrs["index"]
	case "entry", "timer", "feature":
		return n.attrs["name"]
	case "serial", "console":
		if t := n.child("target"); t != nil {
			return t.attrs["port"]
		}
	case "vcpupin", "iothreadpin":
		return n.attrs["vcpu"] + n.attrs["iothread"]
	case "channel":
		if t := n.child("target"); t != nil {
			return t.attrs["name"]
		}
	}
	return ""
}

// elements is the flattened form of a document: one entry per element,
// path ("domain/devices/disk[ua-root]/driver") → its attributes and text.
// A child's path segment is its name, plus [key] when [node.key] gives one
// or [n] (n ≥ 1) for the n-th repeated sibling without a key; so element
// order does not matter.
func elements(root *node) map[string]string {
	out := map[string]string{}
	var rec func(n *node, path string)
	rec = func(n *node, path string) {
		out[path] = describe(n)
		counts := map[string]int{}
		for _, c := range n.children {
			seg := c.name
			if k := c.key(); k != "" {
				seg += "[" + k + "]"
			} else {
				if i := counts[c.name]; i > 0 {
					seg += fmt.Sprintf("[%d]", i)
				}
				counts[c.name]++
			}
			rec(c, path+"/"+seg)
		}
	}
	rec(root, root.name)
	return out
}

func describe(n *node) string {
	keys := make([]string, 0, len(n.attrs))
	for k := range n.attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%q ", k, n.attrs[k])
	}
	if n.text != "" {
		fmt.Fprintf(&b, "text=%q", n.text)
	}
	return strings.TrimSpace(b.String())
}

// difference is one element that is not the same on both sides: missing
// from one ("" on that side) or with other attributes or text. Only the
// element's own attributes and text count, not its children's.
type difference struct {
	Path     string
	Ours     string
	KubeVirt string
	Missing  string // "ours", "kubevirt" or ""
}

func (d difference) String() string {
	switch d.Missing {
	case "ours":
		return fmt.Sprintf("%s: only KubeVirt: %s", d.Path, d.KubeVirt)
	case "kubevirt":
		return fmt.Sprintf("%s: only ours: %s", d.Path, d.Ours)
	}
	return fmt.Sprintf("%s: ours %s | KubeVirt %s", d.Path, d.Ours, d.KubeVirt)
}

// compare lists the differing elements, sorted by path. Element paths are
// computed per side, after each normaliser ran on its tree.
func compare(ours, kubevirt *node) []difference {
	a, b := elements(ours), elements(kubevirt)
	var out []difference
	for p, va := range a {
		vb, ok := b[p]
		switch {
		case !ok:
			out = append(out, difference{Path: p, Ours: va, Missing: "kubevirt"})
		case va != vb:
			out = append(out, difference{Path: p, Ours: va, KubeVirt: vb})
		}
	}
	for p, vb := range b {
		if _, ok := a[p]; !ok {
			out = append(out, difference{Path: p, KubeVirt: vb, Missing: "ours"})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// walk calls f on every element, parents first; f returning false drops
// the element (and what it holds).
func walk(n *node, f func(parent, n *node) bool) {
	kept := n.children[:0]
	for _, c := range n.children {
		if f(n, c) {
			walk(c, f)
			kept = append(kept, c)
		}
	}
	n.children = kept
}

var hexRE = regexp.MustCompile(`^0x[0-9a-fA-F]+$`)

// normalise applies what the comparison does not count on both sides:
// empty elements; PCI addresses and the PCI controllers libvirt or
// EnsureRootPorts add (placement is libvirt's business unless a VMI pins
// an address, and that case is compared by the address tests); hex
// numbers written 0x0a or 10.
func normalise(root *node) {
	walk(root, func(parent, n *node) bool {
		if n.name == "address" && n.attrs["type"] == "pci" && parent.name != "source" {
			return false
		}
		if n.name == "controller" && n.attrs["type"] == "pci" {
			return false
		}
		for k, v := range n.attrs {
			if hexRE.MatchString(v) {
				var x uint64
				fmt.Sscanf(v, "0x%x", &x)
				n.attrs[k] = fmt.Sprint(x)
			}
		}
		return true
	})
	root.prune()
}
