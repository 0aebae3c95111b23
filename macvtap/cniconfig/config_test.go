package cniconfig

import (
	"errors"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/macvtap"
)

func TestParse(t *testing.T) {
	// The NetworkAttachmentDefinition of the source document, with the
	// deviceID Multus adds.
	doc := `{
      "cniVersion": "0.3.1",
      "name": "eth0",
      "type": "macvtap",
      "mtu": 1500,
      "mode": "bridge",
      "promiscMode": true,
      "deviceID": "eth0Mvp0",
      "ipam": {
        "type": "kube-ovn",
        "server_socket": "/run/openvswitch/kube-ovn-daemon.sock",
        "provider": "eth0.default"
      }
     }`
	c, err := Parse([]byte(doc))
	require.NoError(t, err)
	require.Equal(t, "0.3.1", c.CNIVersion)
	require.Equal(t, "eth0", c.Name)
	require.Equal(t, 1500, c.MTU)
	require.True(t, c.PromiscMode)
	require.Equal(t, "eth0Mvp0", c.DeviceID)
	require.Equal(t, "kube-ovn", c.IPAM.Type)
	require.Equal(t, macvtap.ModeBridge, c.MacvtapMode)
	require.Nil(t, c.HardwareAddr)
	require.Equal(t, 107, c.OwnerID())
	require.Equal(t, 107, c.GroupID())

	c, err = Parse([]byte(`{"cniVersion":"1.1.0","name":"n","type":"macvtap","deviceID":"d","mac":"02:23:45:67:89:01",
		"owner":0,"group":36,"lowerDevice":"eno1","ipam":{},"runtimeConfig":{"x":1},"args":{"cni":{}},"pciBusID":"d","capabilities":{"mac":true}}`))
	require.NoError(t, err)
	require.Equal(t, net.HardwareAddr{2, 0x23, 0x45, 0x67, 0x89, 1}, c.HardwareAddr)
	require.Equal(t, 0, c.OwnerID())
	require.Equal(t, 36, c.GroupID())
	maxIDs, err := Parse([]byte(`{"cniVersion":"1.0.0","name":"n","type":"macvtap","deviceID":"d","owner":4294967294,"group":4294967294}`))
	require.NoError(t, err, "the largest uid and gid")
	require.Equal(t, MaxID, maxIDs.OwnerID())
	require.Equal(t, MaxID, maxIDs.GroupID())
	require.Equal(t, "eno1", c.LowerDevice)
	require.Equal(t, macvtap.Mode(""), c.MacvtapMode, "no mode: leave the link's")
}

func TestParseErrors(t *testing.T) {
	const base = `"cniVersion":"1.0.0","name":"n","type":"macvtap","deviceID":"eth0Mvp0"`
	tests := []struct {
		name     string
		in       string
		field    string
		sentinel error
		errText  string
	}{
		{"invalid JSON", `{"cniVersion":`, "", ErrInvalidJSON, ""},
		{"not an object", `["macvtap"]`, "", ErrInvalidJSON, ""},
		{"mtu not a number", `{` + base + `,"mtu":"1500"}`, "mtu", ErrInvalidJSON, ""},
		{"promiscMode not a bool", `{` + base + `,"promiscMode":"yes"}`, "promiscMode", ErrInvalidJSON, ""},
		{"missing cniVersion", `{"name":"n","type":"macvtap","deviceID":"d"}`, "cniVersion", ErrRequired, ""},
		{"unsupported cniVersion", `{"cniVersion":"2.0.0","name":"n","type":"macvtap","deviceID":"d"}`, "cniVersion", ErrUnsupportedVersion, `cniVersion "2.0.0"`},
		{"missing name", `{"cniVersion":"0.3.1","type":"macvtap","deviceID":"d"}`, "name", ErrRequired, ""},
		{"type not macvtap", `{"cniVersion":"0.3.1","name":"n","type":"macvlan","deviceID":"d"}`, "type", ErrWrongType, `type "macvlan"`},
		{"missing type", `{"cniVersion":"0.3.1","name":"n","deviceID":"d"}`, "type", ErrWrongType, ""},
		{"missing deviceID", `{"cniVersion":"0.3.1","name":"n","type":"macvtap"}`, "deviceID", ErrRequired, "macvtap config: deviceID: required"},
		{"bad MAC", `{` + base + `,"mac":"02:00:00:00:00"}`, "mac", ErrBadMAC, ""},
		{"MAC words", `{` + base + `,"mac":"not-a-mac"}`, "mac", ErrBadMAC, ""},
		{"EUI-64 MAC", `{` + base + `,"mac":"02:00:00:00:00:00:00:01"}`, "mac", ErrBadMAC, "8 bytes"},
		{"multicast MAC", `{` + base + `,"mac":"01:00:5e:00:00:01"}`, "mac", ErrMulticastMAC, `mac "01:00:5e:00:00:01": multicast MAC address`},
		{"broadcast MAC", `{` + base + `,"mac":"ff:ff:ff:ff:ff:ff"}`, "mac", ErrMulticastMAC, ""},
		{"zero MAC", `{` + base + `,"mac":"00:00:00:00:00:00"}`, "mac", ErrZeroMAC, ""},
		{"MTU too small", `{` + base + `,"mtu":67}`, "mtu", ErrMTURange, `mtu "67"`},
		{"MTU negative", `{` + base + `,"mtu":-1}`, "mtu", ErrMTURange, ""},
		{"MTU too big", `{` + base + `,"mtu":65536}`, "mtu", ErrMTURange, ""},
		{"unknown mode", `{` + base + `,"mode":"source"}`, "mode", macvtap.ErrUnknownMode, ""},
		{"bad lowerDevice", `{` + base + `,"lowerDevice":"a/b"}`, "lowerDevice", ErrInvalidName, ""},
		{"negative owner", `{` + base + `,"owner":-1}`, "owner", ErrOutOfRange, ""},
		{"negative group", `{` + base + `,"group":-5}`, "group", ErrOutOfRange, ""},
		{"owner 2^32 (would truncate to root)", `{` + base + `,"owner":4294967296}`, "owner", ErrOutOfRange, `owner "4294967296": out of range: want 0 to 4294967294`},
		{"group 2^32 (would truncate to root)", `{` + base + `,"group":4294967296}`, "group", ErrOutOfRange, `group "4294967296"`},
		{"owner 2^32-1 ((uid_t)-1: unchanged)", `{` + base + `,"owner":4294967295}`, "owner", ErrOutOfRange, ""},
		{"group 2^33+107", `{` + base + `,"group":8589934699}`, "group", ErrOutOfRange, ""},
		{"ipam without type", `{` + base + `,"ipam":{"subnet":"10.1.0.0/24"}}`, "ipam.type", ErrRequired, ""},
		{"unknown key", `{` + base + `,"promiscmode":true}`, "promiscmode", ErrUnknownField, `macvtap config: promiscmode: unknown key`},
		{"unknown keys: the first in order", `{` + base + `,"zz":1,"lowerdevice":"eno1"}`, "lowerdevice", ErrUnknownField, ""},
		{"ipam not an object", `{` + base + `,"ipam":"host-local"}`, "ipam", ErrInvalidJSON, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.in))
			require.Error(t, err)
			require.Nil(t, c)
			var ce *ConfigError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, tc.field, ce.Field, "field")
			require.ErrorIs(t, err, tc.sentinel)
			require.Contains(t, err.Error(), tc.errText)
		})
	}
}

func TestParseNetwork(t *testing.T) {
	// GC and STATUS: no deviceID, the valid attachments of GC.
	gc := `{"cniVersion":"1.1.0","name":"n","type":"macvtap","ipam":{"type":"host-local"},
		"cni.dev/valid-attachments":[{"containerID":"c1","ifname":"net1"}]}`
	c, err := ParseNetwork([]byte(gc))
	require.NoError(t, err)
	require.Len(t, c.ValidAttachments, 1)
	_, err = Parse([]byte(gc))
	require.ErrorIs(t, err, ErrRequired, "an attachment needs its deviceID")
	_, err = ParseNetwork([]byte(`{"cniVersion":"1.1.0","name":"n","type":"macvtap","mtu":1}`))
	require.ErrorIs(t, err, ErrMTURange, "the rest is still checked")
	_, err = ParseNetwork([]byte(`{"cniVersion":"1.1.0","name":"n","type":"macvtap","x":1}`))
	require.ErrorIs(t, err, ErrUnknownField)
}

func TestEffectiveMAC(t *testing.T) {
	c, err := Parse([]byte(`{"cniVersion":"1.0.0","name":"n","type":"macvtap","deviceID":"d","mac":"02:00:00:00:00:01"}`))
	require.NoError(t, err)
	tests := []struct {
		name, args string
		want       string
		field      string
		sentinel   error
	}{
		{"no args", "", "02:00:00:00:00:01", "", nil},
		{"args without MAC", "IgnoreUnknown=1;K8S_POD_NAME=virt-launcher-x", "02:00:00:00:00:01", "", nil},
		{"unknown keys tolerated", "K8S_POD_NAMESPACE=default", "02:00:00:00:00:01", "", nil},
		{"args MAC wins", "K8S_POD_NAME=p;MAC=02:23:45:67:89:01", "02:23:45:67:89:01", "", nil},
		{"args multicast MAC", "MAC=03:00:00:00:00:01", "", "CNI_ARGS.MAC", ErrMulticastMAC},
		{"args bad MAC", "MAC=zz", "", "CNI_ARGS.MAC", ErrBadMAC},
		{"args malformed", "MAC", "", "CNI_ARGS", ErrBadArgs},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hw, err := c.EffectiveMAC(tc.args)
			if tc.sentinel != nil {
				var ce *ConfigError
				require.ErrorAs(t, err, &ce)
				require.Equal(t, tc.field, ce.Field)
				require.ErrorIs(t, err, tc.sentinel)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, hw.String())
		})
	}
	noMAC, err := Parse([]byte(`{"cniVersion":"1.0.0","name":"n","type":"macvtap","deviceID":"d"}`))
	require.NoError(t, err)
	hw, err := noMAC.EffectiveMAC("")
	require.NoError(t, err)
	require.Nil(t, hw)
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"cniVersion":"0.3.1","name":"p4p1","type":"macvtap","mtu":1500,"promiscMode":true,"deviceID":"p4p1Mvp0"}`,
		`{"cniVersion":"1.1.0","name":"n","type":"macvtap","deviceID":"d","mac":"02:00:00:00:00:01","ipam":{"type":"static"}}`,
		`{"cniVersion":"1.0.0","name":"n","type":"macvtap","deviceID":"d","mac":"01:00:5e:00:00:01"}`,
		`{"cniVersion":"1.0.0","name":"n","type":"macvtap","deviceID":"d","mtu":67,"mode":"vepa","owner":-1}`,
		`{`, `null`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Err == nil {
				t.Fatalf("error %v is not a well-formed *ConfigError", err)
			}
			return
		}
		if c.Type != PluginType || c.DeviceID == "" || c.Name == "" {
			t.Fatalf("accepted %+v", c)
		}
		if c.MTU != 0 && (c.MTU < MinMTU || c.MTU > MaxMTU) {
			t.Fatalf("accepted MTU %d", c.MTU)
		}
		if c.MAC != "" && (len(c.HardwareAddr) != 6 || c.HardwareAddr[0]&1 != 0) {
			t.Fatalf("accepted MAC %q", c.MAC)
		}
		if c.OwnerID() < 0 || c.GroupID() < 0 || int64(c.OwnerID()) > MaxID || int64(c.GroupID()) > MaxID {
			t.Fatalf("accepted owner/group %d/%d", c.OwnerID(), c.GroupID())
		}
	})
}

func TestDefaultOwnerIsQemu(t *testing.T) {
	require.Equal(t, api.QemuID, DefaultOwner)
	require.Equal(t, api.QemuID, DefaultGroup)
}

// TestConfigRefusesRepeatedKeys: encoding/json (and the IPAM plugin's
// decoder after it) lets a repeated key override the first and matches
// keys without regard to case, so `"mode"` twice, or `"lowerDevice"`
// beside `"LowerDevice"`, would silently give the VM whichever came last.
// A key repeated in any object, exactly or in another case, is refused,
// naming it by its path.
func TestConfigRefusesRepeatedKeys(t *testing.T) {
	const base = `"cniVersion":"1.0.0","name":"n","type":"macvtap","deviceID":"eth0Mvp0"`
	for _, tc := range []struct{ name, in, field, want string }{
		{"mode twice", `{` + base + `,"mode":"bridge","mode":"vepa"}`, "mode", "appears twice"},
		{"lowerDevice and LowerDevice", `{` + base + `,"lowerDevice":"eno1","LowerDevice":"eno2"}`, "LowerDevice", `"lowerDevice" and "LowerDevice" differ only in case`},
		{"deviceID twice", `{` + base + `,"deviceID":"eth0Mvp1"}`, "deviceID", "appears twice"},
		{"in ipam", `{` + base + `,"ipam":{"type":"host-local","subnet":"10.1.0.0/24","Subnet":"10.2.0.0/24"}}`, "ipam.Subnet", "differ only in case"},
		{"in a list", `{` + base + `,"ipam":{"type":"host-local","ranges":[[{"subnet":"10.1.0.0/24","subnet":"10.2.0.0/24"}]]}}`, "ipam.ranges[0][0].subnet", "appears twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, parse := range []func([]byte) (*NetConf, error){Parse, ParseNetwork} {
				c, err := parse([]byte(tc.in))
				require.Error(t, err, "accepted as %+v", c)
				var ce *ConfigError
				require.ErrorAs(t, err, &ce)
				require.Equal(t, tc.field, ce.Field)
				require.ErrorIs(t, err, ErrRepeatedKey)
				require.Contains(t, err.Error(), tc.want)
			}
		})
	}
}
