package cache

import (
	"encoding"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// badValue finds, when a record failed to decode, the first string value
// in data that a typed field of t (an address, a prefix, a MAC) refuses:
// its JSON path ("routes[1].dst"), the value and why. It returns a nil
// error when none is refused (the failure was of another kind). It runs
// on the error path only: a record that decodes is parsed once.
func badValue(data []byte, t reflect.Type) (field, value string, err error) {
	var v any
	if json.Unmarshal(data, &v) != nil {
		return "", "", nil
	}
	return walkValue("", v, t)
}

func walkValue(path string, v any, t reflect.Type) (string, string, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(reflect.TypeFor[encoding.TextUnmarshaler]()) {
		s, ok := v.(string)
		if !ok {
			return "", "", nil
		}
		if err := reflect.New(t).Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
			return path, s, fmt.Errorf("not %s: %w", describe(t), err)
		}
		return "", "", nil
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return "", "", nil
		}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "" || name == "-" {
				continue
			}
			for k, fv := range obj {
				// encoding/json matches keys case-insensitively.
				if !strings.EqualFold(k, name) {
					continue
				}
				p := name
				if path != "" {
					p = path + "." + name
				}
				if fp, val, err := walkValue(p, fv, f.Type); err != nil {
					return fp, val, err
				}
			}
		}
	case reflect.Slice:
		arr, _ := v.([]any)
		for i, e := range arr {
			if fp, val, err := walkValue(fmt.Sprintf("%s[%d]", path, i), e, t.Elem()); err != nil {
				return fp, val, err
			}
		}
	case reflect.Map:
		obj, _ := v.(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			e := obj[k]
			if fp, val, err := walkValue(path, k, t.Key()); err != nil {
				return fp, val, err
			}
			if fp, val, err := walkValue(fmt.Sprintf("%s[%q]", path, k), e, t.Elem()); err != nil {
				return fp, val, err
			}
		}
	}
	return "", "", nil
}

// describe names what a typed field holds, for errors.
func describe(t reflect.Type) string {
	switch t.String() {
	case "netip.Prefix":
		return "an address with prefix length"
	case "netip.Addr":
		return "an IP address"
	case "cache.MAC":
		return "a 48-bit MAC address"
	}
	return "a " + t.String()
}
