package api

import (
	"errors"
	"fmt"

	"github.com/virtnet/virtnet/internal/errclass"
)

// ErrInvalid is matched (with [errors.Is]) by every validation error.
var ErrInvalid = errclass.Permanent("invalid VMI")

// FieldError is a VMI field refused: the field path in KubeVirt's JSON
// spelling (e.g. "spec.domain.devices.interfaces[1].macAddress"), the bad
// value and why, as a Reason (validation) or as an error Err (a value
// Validate lets through that domxml cannot render, wrapped as "domxml: …").
// It is the module's one type for a bad VMI field.
type FieldError struct {
	Path   string
	Value  any
	Reason string
	Err    error
}

func (e *FieldError) Error() string {
	why := e.Reason
	if why == "" && e.Err != nil {
		why = e.Err.Error()
	}
	if e.Value == nil {
		return fmt.Sprintf("%s: %s", e.Path, why)
	}
	return fmt.Sprintf("%s: %s (value %q)", e.Path, why, fmt.Sprint(e.Value))
}

// Unwrap returns Err.
func (e *FieldError) Unwrap() error { return e.Err }

// Is makes every FieldError match [ErrInvalid].
func (e *FieldError) Is(target error) bool { return target == ErrInvalid }

// Permanent reports true: the manifest must change.
func (e *FieldError) Permanent() bool { return true }

// ErrDecode is a manifest that could not be decoded. The message names
// why ("strict decoding", "not YAML or JSON", the kind, the size) and
// wraps the cause where there is one (the FieldErrors of a strict
// decoding, [ErrAliasExpansion], the parser's error).
var ErrDecode = errors.New("decode VMI")

// UnsupportedError names a KubeVirt feature present in a VMI that virtnet
// does not render.
type UnsupportedError struct {
	Path string
}

// Permanent reports true: the manifest must change.
func (e *UnsupportedError) Permanent() bool { return true }

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("%s: KubeVirt feature not supported by virtnet", e.Path)
}

// FieldErrors unpacks an error returned by [Validate], or by [Decode] for
// unknown and duplicate fields (or any error joined from FieldErrors), into
// its FieldErrors.
func FieldErrors(err error) []*FieldError {
	var out []*FieldError
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if fe, ok := err.(*FieldError); ok {
			out = append(out, fe)
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		walk(errors.Unwrap(err))
	}
	walk(err)
	return out
}
