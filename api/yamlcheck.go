package api

import (
	"errors"
	"fmt"
	"strconv"

	yaml "go.yaml.in/yaml/v3"
)

// Alias expansion bounds. YAML aliases let a small manifest stand for a
// huge document (10 000 aliases of one 10 KB anchored string: a 40 KB
// manifest that decodes to 100 MB); decoders expand them. [Decode] sizes the
// expanded document from the parsed node tree, which holds each anchor once,
// before anything expands it, and refuses a manifest whose expanded form
// is larger than MaxAliasExpansion times the manifest plus
// aliasExpansionSlack bytes: aliases may shorten a manifest, not multiply
// it.
const (
	MaxAliasExpansion   = 2
	aliasExpansionSlack = 4 << 10
)

// ErrAliasExpansion is a YAML manifest whose aliases expand beyond the
// bound (see [MaxAliasExpansion]) or refer to themselves; the error
// matches [ErrDecode] too.
var ErrAliasExpansion = errors.New("YAML aliases expand too far")

// yamlCheck walks a parsed YAML document: it sizes its expanded form and
// reports duplicate mapping keys by field path.
type yamlCheck struct {
	budget int64
	sizes  map[*yaml.Node]int64 // expanded size of each anchored node
	active map[*yaml.Node]bool  // anchors being sized (cycle check)
	path   []byte               // of the node being walked (duplicates)
	errs   []error
	// dropped counts the duplicates beyond maxStrictErrors.
	dropped int
}

// checkYAML parses data (the first document, as the decoder reads it)
// without expanding aliases, refuses it when its aliases expand beyond the
// bound or form a cycle, and returns the duplicate keys as FieldErrors.
func checkYAML(data []byte) ([]error, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%w: not YAML or JSON: %w", ErrDecode, err)
	}
	c := &yamlCheck{
		budget: MaxAliasExpansion*int64(len(data)) + aliasExpansionSlack,
		sizes:  map[*yaml.Node]int64{},
		active: map[*yaml.Node]bool{},
	}
	size, err := c.size(&doc)
	if err != nil {
		return nil, fmt.Errorf("%w: YAML aliases: %w", ErrDecode, err)
	}
	if size > c.budget {
		return nil, fmt.Errorf("%w: YAML aliases: %w: the %d-byte manifest expands to more than %d bytes (at most %d× its size plus %d)",
			ErrDecode, ErrAliasExpansion, len(data), c.budget, MaxAliasExpansion, aliasExpansionSlack)
	}
	c.duplicates(&doc, map[*yaml.Node]bool{})
	if c.dropped > 0 {
		c.errs = append(c.errs, &FieldError{Path: "(manifest)", Reason: fmt.Sprintf("%d more duplicate fields not listed", c.dropped)})
	}
	return c.errs, nil
}

// size is the size of n's expanded form, at least the length of every
// scalar plus one per node; it stops counting past the budget.
func (c *yamlCheck) size(n *yaml.Node) (int64, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		return int64(len(n.Value)) + 1, nil
	case yaml.AliasNode:
		return c.size(n.Alias)
	}
	if s, ok := c.sizes[n]; ok {
		return s, nil
	}
	if c.active[n] {
		return 0, fmt.Errorf("%w: anchor %q contains an alias of itself", ErrAliasExpansion, n.Anchor)
	}
	c.active[n] = true
	defer delete(c.active, n)
	total := int64(2)
	for _, ch := range n.Content {
		s, err := c.size(ch)
		if err != nil {
			return 0, err
		}
		total += s
		if total > c.budget {
			return total, nil // no need to count further
		}
	}
	if n.Anchor != "" {
		c.sizes[n] = total
	}
	return total, nil
}

// duplicates reports every mapping key that appears twice in one mapping
// (through aliases too: the expanded document is what is decoded, but
// each anchored node is looked at once). A merge key ("<<") may be
// overridden: that is what it is for. c.path is the path of n, one buffer
// for the whole walk (a string per level would cost the square of the
// depth); at most maxStrictErrors duplicates are listed, the rest
// counted.
func (c *yamlCheck) duplicates(n *yaml.Node, seen map[*yaml.Node]bool) {
	if n.Kind == yaml.AliasNode || seen[n] {
		return
	}
	seen[n] = true
	base := len(c.path)
	defer func() { c.path = c.path[:base] }()
	switch n.Kind {
	case yaml.DocumentNode:
		for _, ch := range n.Content {
			c.duplicates(ch, seen)
		}
	case yaml.SequenceNode:
		for i, ch := range n.Content {
			c.path = growPath(c.path[:base], 22)
			c.path = append(c.path, '[')
			c.path = strconv.AppendInt(c.path, int64(i), 10)
			c.path = append(c.path, ']')
			c.duplicates(ch, seen)
		}
	case yaml.MappingNode:
		var keys map[string]bool
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				continue
			}
			if k.Value == "<<" && k.Tag == "!!merge" {
				continue
			}
			c.path = growPath(c.path[:base], 1+len(k.Value))
			if base > 0 {
				c.path = append(c.path, '.')
			}
			c.path = append(c.path, k.Value...)
			if keys == nil {
				keys = map[string]bool{}
			}
			if keys[k.Value] {
				if len(c.errs) < maxStrictErrors {
					c.errs = append(c.errs, &FieldError{Path: shortPath(c.path), Reason: "duplicate field (the API server refuses it; a decoder would keep the last)"})
				} else {
					c.dropped++
				}
			}
			keys[k.Value] = true
			c.duplicates(v, seen)
		}
	}
}

// growPath makes room in path for n more bytes, doubling it (append grows
// a large slice by a quarter, which allocates several times the final
// size on the way).
func growPath(path []byte, n int) []byte {
	if len(path)+n <= cap(path) {
		return path
	}
	p := make([]byte, len(path), max(2*cap(path), len(path)+n, 64))
	copy(p, path)
	return p
}
