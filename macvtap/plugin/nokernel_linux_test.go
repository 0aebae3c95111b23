package plugin

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/macvtap"
	"github.com/virtnet/virtnet/macvtap/cniconfig"
)

// These tests need neither root nor macvtap support: configuration errors
// are found before any namespace is opened, and a gone namespace ends DEL.

func TestConfigErrorsBeforeAnyKernelWork(t *testing.T) {
	const ok = `"cniVersion":"1.0.0","name":"n","type":"macvtap","deviceID":"eth0Mvp0"`
	tests := []struct {
		name     string
		conf     string
		cniArgs  string
		ifname   string
		field    string
		sentinel error
	}{
		{"invalid JSON", `{`, "", "net1", "", cniconfig.ErrInvalidJSON},
		{"no deviceID", `{"cniVersion":"1.0.0","name":"n","type":"macvtap"}`, "", "net1", "deviceID", cniconfig.ErrRequired},
		{"wrong type", `{"cniVersion":"1.0.0","name":"n","type":"bridge","deviceID":"d"}`, "", "net1", "type", cniconfig.ErrWrongType},
		{"old cniVersion typo", `{"cniVersion":"0.3.2","name":"n","type":"macvtap","deviceID":"d"}`, "", "net1", "cniVersion", cniconfig.ErrUnsupportedVersion},
		{"multicast mac", `{` + ok + `,"mac":"33:33:00:00:00:01"}`, "", "net1", "mac", cniconfig.ErrMulticastMAC},
		{"mtu", `{` + ok + `,"mtu":20}`, "", "net1", "mtu", cniconfig.ErrMTURange},
		{"mode", `{` + ok + `,"mode":"source"}`, "", "net1", "mode", macvtap.ErrUnknownMode},
		{"CNI_ARGS MAC", `{` + ok + `}`, "MAC=01:02:03:04:05:06", "net1", "CNI_ARGS.MAC", cniconfig.ErrMulticastMAC},
		{"CNI_ARGS malformed", `{` + ok + `}`, "K8S_POD_NAME", "net1", "CNI_ARGS", cniconfig.ErrBadArgs},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &Plugin{}
			args := &skel.CmdArgs{ContainerID: "c1", Netns: "/nonexistent/netns", IfName: tc.ifname, Args: tc.cniArgs, StdinData: []byte(tc.conf)}
			err := p.Add(args)
			var ce *cniconfig.ConfigError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, tc.field, ce.Field)
			require.ErrorIs(t, err, tc.sentinel)

			var te *types.Error
			require.ErrorAs(t, CNIError(err), &te)
			require.EqualValues(t, types.ErrInvalidNetworkConfig, te.Code)
		})
	}

	t.Run("bad CNI_IFNAME", func(t *testing.T) {
		err := (&Plugin{}).Add(&skel.CmdArgs{Netns: "/nonexistent", IfName: "a/b", StdinData: []byte(`{` + ok + `}`)})
		var pe *Error
		require.ErrorAs(t, err, &pe)
		require.Equal(t, "ADD", pe.Verb)
		require.Contains(t, err.Error(), `CNI_IFNAME "a/b"`)
	})
	t.Run("ADD into a gone netns", func(t *testing.T) {
		err := (&Plugin{}).Add(&skel.CmdArgs{Netns: "/nonexistent/netns", IfName: "net1", StdinData: []byte(`{` + ok + `}`)})
		var pe *Error
		require.ErrorAs(t, err, &pe)
		require.Equal(t, "open container netns", pe.Step)
		var te *types.Error
		require.ErrorAs(t, CNIError(err), &te)
		require.EqualValues(t, types.ErrInternal, te.Code)
	})
}

func TestDelWithoutNamespace(t *testing.T) {
	conf := []byte(`{"cniVersion":"1.0.0","name":"n","type":"macvtap","deviceID":"eth0Mvp0"}`)
	notNS := filepath.Join(t.TempDir(), "plain-file")
	require.NoError(t, os.WriteFile(notNS, nil, 0o600))
	tests := []struct {
		name, netns string
	}{
		{"no CNI_NETNS", ""},
		{"netns path gone", filepath.Join(t.TempDir(), "gone")},
		{"netns path no longer a namespace", notNS},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &Plugin{}
			args := &skel.CmdArgs{ContainerID: "c1", Netns: tc.netns, IfName: "net1", StdinData: conf}
			require.NoError(t, p.Del(args))
			require.NoError(t, p.Del(args), "DEL twice")
		})
	}
	t.Run("bad config is still an error", func(t *testing.T) {
		err := (&Plugin{}).Del(&skel.CmdArgs{IfName: "net1", StdinData: []byte(`{"type":"macvtap"}`)})
		require.True(t, errors.As(err, new(*cniconfig.ConfigError)))
	})
	t.Run("IPAM DEL runs even when the netns is gone", func(t *testing.T) {
		bin := binDir(t)
		log := filepath.Join(t.TempDir(), "ipam.log")
		t.Setenv(fakeIPAMLog, log)
		args := &skel.CmdArgs{ContainerID: "c1", Netns: "/nonexistent", IfName: "net1", Path: bin,
			StdinData: []byte(`{"cniVersion":"1.0.0","name":"n","type":"macvtap","deviceID":"d","ipam":{"type":"fakeipam"}}`)}
		require.NoError(t, (&Plugin{}).Del(args))
		got, err := os.ReadFile(log)
		require.NoError(t, err)
		require.Equal(t, "DEL net1\n", string(got))
	})
}

func TestCheckNeedsPrevResult(t *testing.T) {
	err := (&Plugin{}).Check(&skel.CmdArgs{Netns: "/nonexistent", IfName: "net1",
		StdinData: []byte(`{"cniVersion":"1.0.0","name":"n","type":"macvtap","deviceID":"d"}`)})
	require.ErrorIs(t, err, ErrNoPrevResult)
}

func TestStatus(t *testing.T) {
	require.NoError(t, (&Plugin{}).Status(&skel.CmdArgs{StdinData: []byte(`{"cniVersion":"1.1.0","name":"n","type":"macvtap","deviceID":"d"}`)}))
	require.Error(t, (&Plugin{}).Status(&skel.CmdArgs{StdinData: []byte(`{}`)}))
}
