package cache_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/cache"
)

// FuzzDecode feeds arbitrary bytes to Decode for both record types: it
// must never panic, must fail only with a CorruptError or VersionError
// naming the path, and what it accepts must encode to bytes that rewrite
// identically.
//
//	go test ./cache -run XXX -fuzz FuzzDecode -fuzztime 30s
func FuzzDecode(f *testing.F) {
	pi := sampleProgress()
	pi.Version = cache.Version
	ii := sampleInterface()
	ii.Version = cache.Version
	for _, rec := range []any{pi, ii, &cache.Interface{Version: cache.Version}} {
		data, err := json.MarshalIndent(rec, "", "  ")
		require.NoError(f, err)
		f.Add(data)
	}
	for _, s := range []string{
		`{"version": 1, "state": "finished"}`,
		`{"version": 2}`,
		`{"version": 1, "state": "exploded"}`,
		`{"version": 1}{"version": 1}`,
		`{"version": 1, "unknown": 1}`,
		`null`, ``, `{"version": 1e400}`,
	} {
		f.Add([]byte(s))
	}
	const path = "/fuzz/interface-x.json"
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, mk := range []func() any{
			func() any { return &cache.Progress{} },
			func() any { return &cache.Interface{} },
		} {
			rec := mk()
			var err error
			switch r := rec.(type) {
			case *cache.Progress:
				err = cache.Decode(path, data, r)
			case *cache.Interface:
				err = cache.Decode(path, data, r)
			}
			if err != nil {
				var ce *cache.CorruptError
				var ve *cache.VersionError
				require.True(t, errors.As(err, &ce) || errors.As(err, &ve), "unexpected error type %T: %v", err, err)
				require.Contains(t, err.Error(), path)
				continue
			}
			// Re-encoding is a fixpoint: what the store would write for an
			// accepted record decodes and re-encodes to the same bytes
			// (the input itself need not: "routes": [] is written as
			// nothing, keys match case-insensitively).
			out, err := json.MarshalIndent(rec, "", "  ")
			require.NoError(t, err, "an accepted record encodes")
			again := mk()
			switch r := again.(type) {
			case *cache.Progress:
				err = cache.Decode(path, out, r)
			case *cache.Interface:
				err = cache.Decode(path, out, r)
			}
			require.NoError(t, err, "an encoded record decodes: %s", out)
			out2, err := json.MarshalIndent(again, "", "  ")
			require.NoError(t, err)
			require.Equal(t, string(out), string(out2))
		}
	})
}
