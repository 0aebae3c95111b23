package plugin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/macvtap"
	"github.com/virtnet/virtnet/macvtap/cniconfig"
	"github.com/virtnet/virtnet/testrig/testutil"
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
			require.Less(t, te.Code, uint(100), "a spec code (TestCNIErrorCodes has each)")
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
		require.EqualValues(t, types.ErrUnknownContainer, te.Code)
	})
}

// TestCNIErrorCodes checks the code of every error a runtime can provoke
// without a kernel: each is one of the CNI spec's codes (or this plugin's
// 100+), never 999.
func TestCNIErrorCodes(t *testing.T) {
	const ok = `"cniVersion":"1.0.0","name":"n","type":"macvtap","deviceID":"eth0Mvp0"`
	notNS := filepath.Join(t.TempDir(), "plain-file")
	require.NoError(t, os.WriteFile(notNS, nil, 0o600))
	prev := `"prevResult":{"cniVersion":"1.0.0","interfaces":[{"name":"net1","sandbox":"/nonexistent/netns"}]}`
	tests := []struct {
		name     string
		verb     func(*Plugin, *skel.CmdArgs) error
		netns    string
		ifname   string
		cniArgs  string
		conf     string
		code     uint
		sentinel error
	}{
		{"ADD invalid JSON", (*Plugin).Add, "/nonexistent/netns", "net1", "", `{`, types.ErrDecodingFailure, cniconfig.ErrInvalidJSON},
		{"ADD mtu of the wrong JSON type", (*Plugin).Add, "/nonexistent/netns", "net1", "", `{` + ok + `,"mtu":"9000"}`, types.ErrDecodingFailure, cniconfig.ErrInvalidJSON},
		{"ADD unsupported cniVersion", (*Plugin).Add, "/nonexistent/netns", "net1", "", `{"cniVersion":"0.3.2","name":"n","type":"macvtap","deviceID":"d"}`, types.ErrIncompatibleCNIVersion, cniconfig.ErrUnsupportedVersion},
		{"ADD owner above 2^32-1", (*Plugin).Add, "/nonexistent/netns", "net1", "", `{` + ok + `,"owner":4294967296}`, types.ErrInvalidNetworkConfig, cniconfig.ErrOutOfRange},
		{"ADD multicast CNI_ARGS MAC", (*Plugin).Add, "/nonexistent/netns", "net1", "MAC=01:02:03:04:05:06", `{` + ok + `}`, types.ErrInvalidEnvironmentVariables, cniconfig.ErrMulticastMAC},
		{"ADD bad CNI_IFNAME", (*Plugin).Add, "/nonexistent/netns", "a/b", "", `{` + ok + `}`, types.ErrInvalidEnvironmentVariables, ErrBadIfName},
		{"ADD gone netns", (*Plugin).Add, "/nonexistent/netns", "net1", "", `{` + ok + `}`, types.ErrUnknownContainer, ErrNetNSGone},
		{"ADD netns that is a regular file", (*Plugin).Add, notNS, "net1", "", `{` + ok + `}`, types.ErrInvalidEnvironmentVariables, ErrNotNetNS},
		{"CHECK without prevResult", (*Plugin).Check, "/nonexistent/netns", "net1", "", `{` + ok + `}`, types.ErrInvalidNetworkConfig, ErrNoPrevResult},
		{"CHECK prevResult of the wrong shape", (*Plugin).Check, "/nonexistent/netns", "net1", "", `{` + ok + `,"prevResult":{"interfaces":"net1"}}`, types.ErrDecodingFailure, ErrBadPrevResult},
		{"CHECK prevResult without the interface", (*Plugin).Check, "/nonexistent/netns", "net2", "", `{` + ok + `,` + prev + `}`, CodeMismatch, ErrMismatch},
		{"CHECK gone netns", (*Plugin).Check, "/nonexistent/netns", "net1", "", `{` + ok + `,` + prev + `}`, types.ErrUnknownContainer, ErrNetNSGone},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.verb(&Plugin{}, &skel.CmdArgs{ContainerID: "c1", Netns: tc.netns, IfName: tc.ifname, Args: tc.cniArgs, StdinData: []byte(tc.conf)})
			require.ErrorIs(t, err, tc.sentinel)
			var te *types.Error
			require.ErrorAs(t, CNIError(err), &te)
			require.Equal(t, tc.code, te.Code, "code of %v", err)
			require.Equal(t, err.Error(), te.Msg)
		})
	}
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

// TestGCReleasesStaleAddress: the reference host-local IPAM (go.mod's
// version) holds addresses of two attachments; a GC (through the plugin's
// process, as a runtime calls it) naming only one of them as valid leaves
// that one and releases the stale one. STATUS reaches the IPAM too.
func TestGCReleasesStaleAddress(t *testing.T) {
	plugins := testutil.CNIPluginDir(t)
	bin := binDir(t)
	require.NoError(t, os.Symlink(filepath.Join(plugins, "host-local"), filepath.Join(bin, "host-local")))
	data := t.TempDir()
	ipam := `"ipam":{"type":"host-local","dataDir":"` + data + `","ranges":[[{"subnet":"192.0.2.0/24"}]]}`
	p := &Plugin{Log: testLogger(t)}
	for _, id := range []string{"live", "stale"} {
		args := &skel.CmdArgs{ContainerID: id, Netns: "/nonexistent", IfName: "net1", Path: bin,
			StdinData: []byte(`{"cniVersion":"1.1.0","name":"gcnet","type":"macvtap","deviceID":"d",` + ipam + `}`)}
		conf, err := cniconfig.Parse(args.StdinData)
		require.NoError(t, err)
		res, err := p.ipamAdd(t.Context(), conf, args)
		require.NoError(t, err)
		require.Len(t, res.IPs, 1)
	}
	reserved := func() map[string]string {
		out := map[string]string{}
		entries, err := os.ReadDir(filepath.Join(data, "gcnet"))
		require.NoError(t, err)
		for _, e := range entries {
			if net.ParseIP(e.Name()) == nil {
				continue // lock, last_reserved_ip
			}
			b, err := os.ReadFile(filepath.Join(data, "gcnet", e.Name()))
			require.NoError(t, err)
			out[e.Name()] = strings.Fields(string(b))[0]
		}
		return out
	}
	require.ElementsMatch(t, []string{"live", "stale"}, slices.Collect(maps.Values(reserved())))

	run := func(verb, conf string) (string, error) {
		cmd := exec.CommandContext(t.Context(), filepath.Join(bin, rolePlugin))
		cmd.Env = append(os.Environ(), "CNI_COMMAND="+verb, "CNI_PATH="+bin)
		cmd.Stdin = strings.NewReader(conf)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	gc := `{"cniVersion":"1.1.0","name":"gcnet","type":"macvtap",` + ipam +
		`,"cni.dev/valid-attachments":[{"containerID":"live","ifname":"net1"}]}`
	out, err := run("GC", gc)
	require.NoError(t, err, out)
	require.Equal(t, []string{"live"}, slices.Collect(maps.Values(reserved())), "the stale address is released")
	out, err = run("STATUS", `{"cniVersion":"1.1.0","name":"gcnet","type":"macvtap",`+ipam+`}`)
	require.NoError(t, err, out)

	// A misspelt key is refused before the IPAM runs, with code 2 naming it.
	out, err = run("GC", `{"cniVersion":"1.1.0","name":"gcnet","type":"macvtap","lowerdevice":"eno1",`+ipam+`}`)
	require.Error(t, err)
	require.Contains(t, out, `"code": 2`)
	require.Contains(t, out, "lowerdevice: unknown key")
	require.Len(t, reserved(), 1)
}

// TestGCAndStatusReachIPAM: GC and STATUS run the configured IPAM plugin
// with the verb; without IPAM they do nothing.
func TestGCAndStatusReachIPAM(t *testing.T) {
	bin := binDir(t)
	log := filepath.Join(t.TempDir(), "ipam.log")
	t.Setenv(fakeIPAMLog, log)
	conf := []byte(`{"cniVersion":"1.1.0","name":"n","type":"macvtap","ipam":{"type":"fakeipam"}}`)
	p := &Plugin{Log: testLogger(t)}
	require.NoError(t, p.GC(&skel.CmdArgs{Path: bin, StdinData: conf}))
	require.NoError(t, p.Status(&skel.CmdArgs{Path: bin, StdinData: conf}))
	got, err := os.ReadFile(log)
	require.NoError(t, err)
	require.Equal(t, "GC \nSTATUS \n", string(got))
	noIPAM := []byte(`{"cniVersion":"1.1.0","name":"n","type":"macvtap"}`)
	require.NoError(t, p.GC(&skel.CmdArgs{StdinData: noIPAM}))
	require.NoError(t, p.Status(&skel.CmdArgs{StdinData: noIPAM}))
}

func TestTransientCode(t *testing.T) {
	tests := []struct {
		name string
		err  error
		code uint
	}{
		{"EBUSY", &Error{Verb: "ADD", Step: "move", Err: syscall.EBUSY}, types.ErrTryAgainLater},
		{"ENOBUFS", &Error{Verb: "ADD", Step: "move", Err: fmt.Errorf("netlink: %w", syscall.ENOBUFS)}, types.ErrTryAgainLater},
		{"deadline", &Error{Verb: "DEL", Step: "run IPAM", Err: context.DeadlineExceeded}, types.ErrTryAgainLater},
		{"EPERM", &Error{Verb: "ADD", Step: "move", Err: syscall.EPERM}, types.ErrInternal},
		{"IPAM's own 11", &Error{Verb: "ADD", Step: "run IPAM", Err: types.NewError(types.ErrTryAgainLater, "pool busy", "")}, types.ErrTryAgainLater},
		{"unknown key", &cniconfig.ConfigError{Field: "x", Err: cniconfig.ErrUnknownField}, types.ErrUnsupportedField},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var te *types.Error
			require.ErrorAs(t, CNIError(tc.err), &te)
			require.Equal(t, tc.code, te.Code)
		})
	}
}
