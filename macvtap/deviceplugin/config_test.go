package deviceplugin

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/macvtap"
)

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Resource
	}{
		{"empty array means discovery", `[]`, []Resource{}},
		{"null means discovery", `null`, []Resource{}},
		{"source document example", `[ {
        "name" : "eth0",
        "lowerDevice" : "eth0",
        "mode": "bridge",
        "capacity" : 50
     } ]`, []Resource{{Name: "eth0", LowerDevice: "eth0", Mode: macvtap.ModeBridge, Capacity: 50}}},
		{"defaults", `[{"name":"dataplane","lowerDevice":"eno1"}]`,
			[]Resource{{Name: "dataplane", LowerDevice: "eno1", Mode: macvtap.ModeBridge, Capacity: 100}}},
		{"empty mode is bridge", `[{"name":"a","lowerDevice":"eno1","mode":""}]`,
			[]Resource{{Name: "a", LowerDevice: "eno1", Mode: macvtap.ModeBridge, Capacity: 100}}},
		{"every mode", `[{"name":"a","lowerDevice":"eno1","mode":"vepa","capacity":1},
			{"name":"b","lowerDevice":"eno1","mode":"private","capacity":65536},
			{"name":"c","lowerDevice":"eno2","mode":"passthru"},
			{"name":"d.x_y-z","lowerDevice":"p4p1","mode":"passthru","capacity":1}]`,
			[]Resource{
				{Name: "a", LowerDevice: "eno1", Mode: macvtap.ModeVEPA, Capacity: 1},
				{Name: "b", LowerDevice: "eno1", Mode: macvtap.ModePrivate, Capacity: 65536},
				{Name: "c", LowerDevice: "eno2", Mode: macvtap.ModePassthru, Capacity: 1},
				{Name: "d.x_y-z", LowerDevice: "p4p1", Mode: macvtap.ModePassthru, Capacity: 1},
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConfig([]byte(tc.in))
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		index     int
		field     string
		sentinel  error
		errSubstr string
	}{
		{"invalid JSON", `[{"name":`, -1, "", ErrInvalidJSON, "DP_MACVTAP_CONF: invalid JSON"},
		{"empty document", ``, -1, "", ErrInvalidJSON, ""},
		{"object not array", `{"name":"a","lowerDevice":"eth0"}`, -1, "", ErrInvalidJSON, ""},
		{"entry not object", `[{"name":"a","lowerDevice":"eth0"}, "eth1"]`, 1, "", ErrInvalidJSON, "DP_MACVTAP_CONF[1]"},
		{"null entry", `[null]`, 0, "", ErrInvalidJSON, ""},
		{"unknown field", `[{"name":"a","lowerDevice":"eth0","capacty":5}]`, 0, "capacty", ErrUnknownField, `DP_MACVTAP_CONF[0].capacty: unknown field`},
		{"unknown mode", `[{"name":"a","lowerDevice":"eth0"},{"name":"b","lowerDevice":"eth0","mode":"source"}]`, 1, "mode", macvtap.ErrUnknownMode, `DP_MACVTAP_CONF[1].mode "source"`},
		{"mode wrong case", `[{"name":"a","lowerDevice":"eth0","mode":"Bridge"}]`, 0, "mode", macvtap.ErrUnknownMode, ""},
		{"capacity zero", `[{"name":"a","lowerDevice":"eth0","capacity":0}]`, 0, "capacity", ErrCapacity, `capacity "0"`},
		{"capacity negative", `[{"name":"a","lowerDevice":"eth0","capacity":-3}]`, 0, "capacity", ErrCapacity, ""},
		{"capacity too big", `[{"name":"a","lowerDevice":"eth0","capacity":65537}]`, 0, "capacity", ErrCapacity, ""},
		{"capacity not a number", `[{"name":"a","lowerDevice":"eth0","capacity":"50"}]`, 0, "capacity", ErrInvalidJSON, ""},
		{"capacity fractional", `[{"name":"a","lowerDevice":"eth0","capacity":1.5}]`, 0, "capacity", ErrInvalidJSON, ""},
		{"passthru capacity above one", `[{"name":"a","lowerDevice":"eth0","mode":"passthru","capacity":2}]`, 0, "capacity", ErrCapacity, "passthru"},
		{"missing name", `[{"lowerDevice":"eth0"}]`, 0, "name", ErrRequired, `DP_MACVTAP_CONF[0].name: required`},
		{"empty name", `[{"name":"","lowerDevice":"eth0"}]`, 0, "name", ErrRequired, ""},
		{"name with slash", `[{"name":"a/b","lowerDevice":"eth0"}]`, 0, "name", ErrInvalidName, ""},
		{"name too long", `[{"name":"` + strings.Repeat("n", 64) + `","lowerDevice":"eth0"}]`, 0, "name", ErrInvalidName, ""},
		{"name not a string", `[{"name":7,"lowerDevice":"eth0"}]`, 0, "name", ErrInvalidJSON, ""},
		{"missing lowerDevice", `[{"name":"a"}]`, 0, "lowerDevice", ErrRequired, ""},
		{"empty lowerDevice", `[{"name":"a","lowerDevice":""}]`, 0, "lowerDevice", ErrRequired, ""},
		{"lowerDevice too long", `[{"name":"a","lowerDevice":"abcdefghijklmnop"}]`, 0, "lowerDevice", ErrInvalidName, ""},
		{"lowerDevice with colon", `[{"name":"a","lowerDevice":"eth0:1"}]`, 0, "lowerDevice", ErrInvalidName, ""},
		{"duplicate name", `[{"name":"a","lowerDevice":"eth0"},{"name":"b","lowerDevice":"eth1"},{"name":"a","lowerDevice":"eth2"}]`, 2, "name", ErrDuplicateName, "entry 0 has it too"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConfig([]byte(tc.in))
			require.Error(t, err)
			require.Nil(t, got)
			var ce *ConfigError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, tc.index, ce.Index, "index")
			require.Equal(t, tc.field, ce.Field, "field")
			require.ErrorIs(t, err, tc.sentinel)
			require.Contains(t, err.Error(), tc.errSubstr)
		})
	}
}

func TestConfigFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	_, err := ConfigFromEnv(env(nil))
	require.ErrorIs(t, err, ErrConfigUnset)
	require.EqualError(t, err, "DP_MACVTAP_CONF: not set")

	got, err := ConfigFromEnv(env(map[string]string{ConfigEnv: `[{"name":"eth0","lowerDevice":"eth0"}]`}))
	require.NoError(t, err)
	require.Equal(t, "macvtap.network.kubevirt.io/eth0", got[0].ResourceName())
}

func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		`[]`, `null`, `[{"name":"eth0","lowerDevice":"eth0","mode":"bridge","capacity":50}]`,
		`[{"name":"a","lowerDevice":"eth0","mode":"passthru"}]`, `[{"name":"a","lowerDevice":"eth0","x":1}]`,
		`[{"name":"a","lowerDevice":"eth0"},{"name":"a","lowerDevice":"eth1"}]`, `[null]`, `{`, ``,
		`[{"name":"a","lowerDevice":"eth0","LowerDevice":"eth1"}]`, `[{"name":"a","mode":"bridge","mode":"vepa","lowerDevice":"eth0"}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := ParseConfig(data)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a *ConfigError", err)
			}
			if ce.Index < -1 || ce.Err == nil {
				t.Fatalf("malformed ConfigError %#v", ce)
			}
			return
		}
		names := map[string]bool{}
		for _, r := range res {
			if names[r.Name] {
				t.Fatalf("duplicate %q accepted", r.Name)
			}
			names[r.Name] = true
			if r.Capacity < 1 || r.Capacity > MaxCapacity || (r.Mode == macvtap.ModePassthru && r.Capacity != 1) {
				t.Fatalf("bad capacity accepted: %+v", r)
			}
			if _, err := macvtap.ParseMode(string(r.Mode)); err != nil || r.Mode == "" {
				t.Fatalf("bad mode accepted: %+v", r)
			}
			if macvtap.ValidIfName(r.LowerDevice) != nil {
				t.Fatalf("bad lowerDevice accepted: %+v", r)
			}
		}
		// Whatever parses must make a usable inventory.
		if _, err := NewInventory(res); err != nil {
			t.Fatalf("NewInventory(%+v): %v", res, err)
		}
	})
}

// TestConfigRefusesCaseVariantsAndRepeatedKeys: encoding/json matches keys
// without regard to case and lets a repeated key override the first, so
// `"LowerDevice"` next to `"lowerDevice"` (or either twice) would silently
// put the macvtaps on whichever came last. Every such entry is refused,
// naming the entry and the key, like every other configuration virtnet
// reads.
func TestConfigRefusesCaseVariantsAndRepeatedKeys(t *testing.T) {
	for _, tc := range []struct {
		name, in, field string
		sentinel        error
		want            string
	}{
		{"LowerDevice next to lowerDevice", `[{"name":"a","lowerDevice":"eth0","LowerDevice":"eth1"}]`, "LowerDevice", ErrRepeatedKey, `"lowerDevice" and "LowerDevice" differ only in case`},
		{"LowerDevice before lowerDevice", `[{"name":"a","LowerDevice":"eth1","lowerDevice":"eth0"}]`, "LowerDevice", ErrUnknownField, `did you mean "lowerDevice"`},
		{"lowerDevice twice", `[{"name":"a","lowerDevice":"eth0","lowerDevice":"eth1"}]`, "lowerDevice", ErrRepeatedKey, "appears twice"},
		{"name twice", `[{"name":"a","lowerDevice":"eth0","name":"b"}]`, "name", ErrRepeatedKey, "appears twice"},
		{"capacity twice", `[{"name":"a","lowerDevice":"eth0","capacity":1,"capacity":5}]`, "capacity", ErrRepeatedKey, "appears twice"},
		{"mode and MODE", `[{"name":"a","lowerDevice":"eth0","mode":"bridge","MODE":"vepa"}]`, "MODE", ErrRepeatedKey, "differ only in case"},
		{"LowerDevice alone", `[{"name":"a","LowerDevice":"eth0"}]`, "LowerDevice", ErrUnknownField, `did you mean "lowerDevice"`},
		{"Capacity alone", `[{"name":"a","lowerDevice":"eth0","Capacity":5}]`, "Capacity", ErrUnknownField, `did you mean "capacity"`},
		{"in the second entry", `[{"name":"a","lowerDevice":"eth0"},{"name":"b","lowerDevice":"eth1","Mode":"vepa"}]`, "Mode", ErrUnknownField, `DP_MACVTAP_CONF[1].Mode`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConfig([]byte(tc.in))
			require.Error(t, err, "accepted as %+v", got)
			var ce *ConfigError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, tc.field, ce.Field)
			require.ErrorIs(t, err, tc.sentinel)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}
