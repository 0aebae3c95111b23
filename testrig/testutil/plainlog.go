package testutil

import (
	"context"
	"encoding"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"testing"
)

// PlainLogger is a logger at debug level that fails t when a log line
// carries an attribute whose value is not plain: a Go struct, a pointer
// to one or a map, dumped as one attribute (slog.Any of a record),
// rather than its fields as attributes of their own. Strings, numbers,
// booleans, durations, times, groups, errors, and values that print
// themselves (fmt.Stringer, encoding.TextMarshaler) are plain, as are
// slices of those. Lines also go to t.Log. Lines counts the lines seen,
// so that a test can require that the code under test logged at all.
func PlainLogger(t testing.TB) (*slog.Logger, *LineCount) {
	n := &LineCount{}
	return slog.New(&plainHandler{t: t, n: n}), n
}

// LineCount counts the lines a [PlainLogger] handled.
type LineCount struct {
	mu sync.Mutex
	n  int
}

// Lines returns the number of lines logged so far.
func (c *LineCount) Lines() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

type plainHandler struct {
	t     testing.TB
	n     *LineCount
	attrs []slog.Attr
}

func (h *plainHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *plainHandler) Handle(_ context.Context, r slog.Record) error {
	h.n.mu.Lock()
	h.n.n++
	h.n.mu.Unlock()
	line := fmt.Sprintf("%s %q", r.Level, r.Message)
	check := func(a slog.Attr) {
		line += fmt.Sprintf(" %s=%v", a.Key, a.Value)
		if why := notPlain(a.Value); why != "" {
			h.t.Errorf("log line %q: attribute %q is %s, not a plain value", r.Message, a.Key, why)
		}
	}
	for _, a := range h.attrs {
		check(a)
	}
	r.Attrs(func(a slog.Attr) bool { check(a); return true })
	h.t.Log(line)
	return nil
}

func (h *plainHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &plainHandler{t: h.t, n: h.n, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

func (h *plainHandler) WithGroup(string) slog.Handler { return h }

// notPlain says what v is when it is not a plain value, else "".
func notPlain(v slog.Value) string {
	v = v.Resolve()
	switch v.Kind() {
	case slog.KindGroup:
		for _, a := range v.Group() {
			if why := notPlain(a.Value); why != "" {
				return why
			}
		}
		return ""
	case slog.KindAny:
		return notPlainAny(v.Any())
	}
	return ""
}

func notPlainAny(x any) string {
	switch x.(type) {
	case nil, error, fmt.Stringer, encoding.TextMarshaler:
		return ""
	}
	rv := reflect.ValueOf(x)
	switch rv.Kind() {
	case reflect.Pointer:
		if rv.Elem().Kind() == reflect.Struct {
			return "a pointer to a struct (" + rv.Type().String() + ")"
		}
	case reflect.Struct:
		return "a struct (" + rv.Type().String() + ")"
	case reflect.Map:
		return "a map (" + rv.Type().String() + ")"
	case reflect.Slice, reflect.Array:
		for i := range rv.Len() {
			if why := notPlainAny(rv.Index(i).Interface()); why != "" {
				return "a list of " + why
			}
		}
	}
	return ""
}
