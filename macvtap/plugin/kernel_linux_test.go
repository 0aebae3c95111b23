package plugin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/skel"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/virtnet/virtnet/macvtap"
	"github.com/virtnet/virtnet/testrig/kernelvm"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// env is a host namespace (standing for the node) and a container
// namespace, both fresh, so tests never touch the real host's links.
type env struct {
	host, cont *testutil.NS
	p          *Plugin
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{host: testutil.NewNS(t, "vn-mvhost"), cont: testutil.NewNS(t, "vn-mvpod")}
	e.p = &Plugin{HostNetNS: e.host.Path, Log: testLogger(t)}
	return e
}

func (e *env) args(conf, ifname, cniArgs string) *skel.CmdArgs {
	return &skel.CmdArgs{ContainerID: "ctr-" + e.cont.Name, Netns: e.cont.Path, IfName: ifname, Args: cniArgs, StdinData: []byte(conf)}
}

// hostLinks returns the names of the host namespace's links but lo.
func linkNames(t *testing.T, h *netlink.Handle) []string {
	t.Helper()
	links, err := h.LinkList()
	require.NoError(t, err)
	var out []string
	for _, l := range links {
		if l.Attrs().Name != "lo" {
			out = append(out, l.Attrs().Name)
		}
	}
	return out
}

// TestAddErrorsOnThisKernel covers the failures that need namespaces but no
// macvtap: nothing to take, a deviceID naming a non-macvtap link, and a
// CNI_IFNAME already taken. Each leaves both namespaces as they were.
func TestAddErrorsOnThisKernel(t *testing.T) {
	testutil.RequireRoot(t)
	tests := []struct {
		name     string
		prepare  func(t *testing.T, e *env)
		conf     string
		sentinel error
		errText  string
	}{
		{"no host link for deviceID", nil,
			`{"cniVersion":"1.0.0","name":"n","type":"macvtap","deviceID":"eth0Mvp0"}`, ErrDeviceNotFound, "set lowerDevice"},
		{"deviceID names a veth", func(t *testing.T, e *env) {
			testutil.AddVeth(t, e.host, "eth0Mvp0", e.host, "peer0", 1500)
		}, `{"cniVersion":"1.0.0","name":"n","type":"macvtap","deviceID":"eth0Mvp0"}`, ErrNotMacvtap, `"eth0Mvp0 (veth)"`},
		{"CNI_IFNAME taken in the container", func(t *testing.T, e *env) {
			testutil.AddVeth(t, e.cont, "net1", e.cont, "peer1", 1500)
		}, `{"cniVersion":"1.0.0","name":"n","type":"macvtap","deviceID":"eth0Mvp0"}`, ErrIfaceExists, `"net1"`},
		{"lowerDevice missing", nil,
			`{"cniVersion":"1.0.0","name":"n","type":"macvtap","deviceID":"eth0Mvp0","lowerDevice":"eno9"}`, nil, `lowerDevice "eno9"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			if tc.prepare != nil {
				tc.prepare(t, e)
			}
			hostBefore, contBefore := linkNames(t, e.host.Handle), linkNames(t, e.cont.Handle)
			_, err := e.p.Setup(t.Context(), e.args(tc.conf, "net1", ""))
			require.Error(t, err)
			if tc.sentinel != nil {
				require.ErrorIs(t, err, tc.sentinel)
			}
			require.Contains(t, err.Error(), tc.errText)
			require.Equal(t, hostBefore, linkNames(t, e.host.Handle), "host namespace changed")
			require.Equal(t, contBefore, linkNames(t, e.cont.Handle), "container namespace changed")
		})
	}
}

// TestDelOnThisKernel: DEL of a link that never existed, twice, and DEL
// that refuses to delete a CNI_IFNAME that is not a macvtap.
func TestDelOnThisKernel(t *testing.T) {
	testutil.RequireRoot(t)
	e := newEnv(t)
	conf := `{"cniVersion":"1.0.0","name":"n","type":"macvtap","deviceID":"eth0Mvp0"}`
	require.NoError(t, e.p.Del(e.args(conf, "net1", "")))
	require.NoError(t, e.p.Del(e.args(conf, "net1", "")))

	testutil.AddVeth(t, e.cont, "net2", e.cont, "peer2", 1500)
	err := e.p.Del(e.args(conf, "net2", ""))
	require.ErrorIs(t, err, ErrNotMacvtap)
	require.Contains(t, linkNames(t, e.cont.Handle), "net2")
}

// The configurations of the VM test, embedded (delegated tests cannot read
// testdata). %s is the deviceID, then extra fields.
const (
	vmMAC  = "02:5a:00:00:00:42"
	vmConf = `{"cniVersion":"%s","name":"dataplane","type":"macvtap","deviceID":"%s"%s}`
)

// TestMacvtapPluginInVM runs the whole plugin against real macvtaps, in a
// kernel VM when this kernel has no dummy/macvtap.
func TestMacvtapPluginInVM(t *testing.T) {
	testutil.SkipCoveredUnderRace(t, "a kernel VM test of the plugin's sequential ADD/DEL; the plugin runs under -race on this kernel in TestAddErrorsOnThisKernel and TestDelOnThisKernel and, with the device plugin, in macvtap/dpserver's TestAllocateChainInVM")
	if kernelvm.Delegate(t, "dummy", "macvtap") {
		return
	}
	testutil.RequireRoot(t)

	tests := []struct {
		name string
		// dpLink is the name under which the "device plugin" creates the
		// macvtap ("" = none).
		dpLink, dpMode string
		deviceID       string
		extra          string
		cniArgs        string
		wantMAC        string
		wantMTU        int
		wantMode       netlink.MacvlanMode
		wantPromisc    bool
	}{
		{
			name:   "device-plugin macvtap under the hashed name",
			dpLink: macvtap.HostLinkName("lower0Mvp0"), dpMode: "bridge", deviceID: "lower0Mvp0",
			extra:   fmt.Sprintf(`,"mac":%q,"mtu":1400,"mode":"vepa","promiscMode":true`, vmMAC),
			wantMAC: vmMAC, wantMTU: 1400, wantMode: netlink.MACVLAN_MODE_VEPA, wantPromisc: true,
		},
		{
			name:   "device-plugin macvtap named after the deviceID (v0.11)",
			dpLink: "lower0Mvp1", dpMode: "private", deviceID: "lower0Mvp1",
			cniArgs: "IgnoreUnknown=1;K8S_POD_NAME=virt-launcher-vmi;MAC=02:5a:00:00:00:43",
			wantMAC: "02:5a:00:00:00:43", wantMTU: 9000 /* the lower device's */, wantMode: netlink.MACVLAN_MODE_PRIVATE,
		},
		{
			name:     "plugin creates the macvtap on lowerDevice",
			deviceID: "lower0Mvp2", extra: `,"lowerDevice":"lower0","mtu":9000`,
			wantMTU: 9000, wantMode: netlink.MACVLAN_MODE_BRIDGE,
		},
	}
	for _, tc := range tests {
		for _, ver := range []string{"0.3.1", "1.0.0", "1.1.0"} {
			t.Run(tc.name+"/"+ver, func(t *testing.T) {
				e := newEnv(t)
				lower := addDummy(t, e.host, "lower0", 9000)
				if tc.dpLink != "" {
					addMacvtap(t, e.host, tc.dpLink, lower, tc.dpMode)
				}
				conf := fmt.Sprintf(vmConf, ver, tc.deviceID, tc.extra)
				args := e.args(conf, "net1", tc.cniArgs)

				var out bytes.Buffer
				e.p.Stdout = &out
				require.NoError(t, e.p.Add(args), "ADD")
				require.Equal(t, []string{"lower0"}, linkNames(t, e.host.Handle), "the macvtap left the host")

				l, err := e.cont.Handle.LinkByName("net1")
				require.NoError(t, err, "net1 in the container")
				mv, ok := l.(*netlink.Macvtap)
				require.True(t, ok, "net1 is a %s", l.Type())
				require.Equal(t, tc.wantMode, mv.Mode)
				require.Equal(t, tc.wantMTU, mv.MTU)
				require.NotZero(t, mv.Flags&net.FlagUp, "net1 is up")
				require.Equal(t, tc.wantPromisc, mv.Promisc != 0, "promiscuous")
				if tc.wantMAC != "" {
					require.Equal(t, tc.wantMAC, mv.HardwareAddr.String())
				}
				// The lower device stays on the host: the link's parent
				// index refers to the host namespace.
				require.Equal(t, lower.Attrs().Index, mv.ParentIndex)

				// The result, in the configuration's version.
				var res map[string]any
				require.NoError(t, json.Unmarshal(out.Bytes(), &res), out.String())
				require.Equal(t, ver, res["cniVersion"])
				{
					ifaces := res["interfaces"].([]any)
					require.Len(t, ifaces, 1)
					iface := ifaces[0].(map[string]any)
					require.Equal(t, "net1", iface["name"])
					require.Equal(t, mv.HardwareAddr.String(), iface["mac"])
					require.Equal(t, e.cont.Path, iface["sandbox"])
				}

				// /dev/tap<ifindex> belongs to qemu (107:107) after ADD.
				st, err := os.Stat(fmt.Sprintf("/dev/tap%d", mv.Index))
				if err == nil {
					require.Equal(t, "107:107", ownerOf(st))
				} else {
					t.Logf("no /dev/tap%d: %v", mv.Index, err)
				}

				// CHECK against the result passes; with another MTU it fails.
				if ver != "0.3.1" {
					require.NoError(t, e.p.Check(withPrev(t, args, out.Bytes())), "CHECK")
					bad := withPrev(t, e.args(fmt.Sprintf(vmConf, ver, tc.deviceID, `,"mtu":1280`), "net1", tc.cniArgs), out.Bytes())
					require.ErrorIs(t, e.p.Check(bad), ErrMismatch)
				}

				// A second ADD is a clean error and changes nothing.
				err = e.p.Add(args)
				require.ErrorIs(t, err, ErrIfaceExists)
				require.Equal(t, []string{"net1"}, linkNames(t, e.cont.Handle))
				require.Equal(t, []string{"lower0"}, linkNames(t, e.host.Handle))

				// DEL leaves nothing behind, and is idempotent.
				require.NoError(t, e.p.Del(args), "DEL")
				require.Empty(t, linkNames(t, e.cont.Handle))
				require.Equal(t, []string{"lower0"}, linkNames(t, e.host.Handle))
				require.NoError(t, e.p.Del(args), "DEL twice")
			})
		}
	}

	t.Run("DEL with the netns gone", func(t *testing.T) {
		e := newEnv(t)
		lower := addDummy(t, e.host, "lower0", 1500)
		addMacvtap(t, e.host, macvtap.HostLinkName("lower0Mvp0"), lower, "bridge")
		gone := testutil.NewNS(t, "vn-mvgone")
		args := &skel.CmdArgs{ContainerID: "c", Netns: gone.Path, IfName: "net1",
			StdinData: []byte(fmt.Sprintf(vmConf, "1.0.0", "lower0Mvp0", ""))}
		require.NoError(t, e.p.Add(args))
		require.NoError(t, deleteNamedNS(gone.Name))
		require.NoError(t, e.p.Del(args), "DEL after the netns went away")
		require.NoError(t, e.p.Del(args), "and again")
	})

	t.Run("failure after the move is undone", func(t *testing.T) {
		// The lower device has MTU 1500, so MTU 9000 fails after the move.
		for _, dp := range []bool{true, false} {
			e := newEnv(t)
			lower := addDummy(t, e.host, "lower0", 1500)
			extra := `,"mtu":9000,"lowerDevice":"lower0"`
			if dp {
				addMacvtap(t, e.host, macvtap.HostLinkName("lower0Mvp0"), lower, "bridge")
				extra = `,"mtu":9000`
			}
			_, err := e.p.Setup(t.Context(), e.args(fmt.Sprintf(vmConf, "1.0.0", "lower0Mvp0", extra), "net1", ""))
			require.Error(t, err)
			require.Contains(t, err.Error(), "set MTU 9000")
			require.Empty(t, linkNames(t, e.cont.Handle), "nothing left in the container (device plugin link: %v)", dp)
			require.Equal(t, []string{"lower0"}, linkNames(t, e.host.Handle), "nothing left on the host")
		}
	})

	t.Run("IPAM result is reported, then released", func(t *testing.T) {
		e := newEnv(t)
		lower := addDummy(t, e.host, "lower0", 1500)
		addMacvtap(t, e.host, macvtap.HostLinkName("lower0Mvp0"), lower, "bridge")
		log := filepath.Join(t.TempDir(), "ipam.log")
		t.Setenv(fakeIPAMLog, log)
		args := e.args(fmt.Sprintf(vmConf, "1.0.0", "lower0Mvp0", `,"ipam":{"type":"fakeipam"}`), "net1", "")
		args.Path = binDir(t)
		res, err := e.p.Setup(t.Context(), args)
		require.NoError(t, err)
		require.Len(t, res.IPs, 1)
		require.Equal(t, "192.0.2.10/24", res.IPs[0].Address.String())
		require.Equal(t, 0, *res.IPs[0].Interface)
		require.Equal(t, []string{"192.0.2.53"}, res.DNS.Nameservers)
		// The address is the VM's: the pod side stays without it.
		l, err := e.cont.Handle.LinkByName("net1")
		require.NoError(t, err)
		addrs, err := e.cont.Handle.AddrList(l, netlink.FAMILY_V4)
		require.NoError(t, err)
		require.Empty(t, addrs)

		var out bytes.Buffer
		require.NoError(t, res.PrintTo(&out))
		require.NoError(t, e.p.Check(withPrev(t, args, out.Bytes())))
		require.NoError(t, e.p.Del(args))
		got, err := os.ReadFile(log)
		require.NoError(t, err)
		require.Equal(t, "ADD net1\nCHECK net1\nDEL net1\n", string(got))
	})

	t.Run("the plugin binary through skel", func(t *testing.T) {
		e := newEnv(t)
		lower := addDummy(t, e.host, "lower0", 1500)
		addMacvtap(t, e.host, "lower0Mvp0", lower, "bridge")
		bin := binDir(t)
		conf := fmt.Sprintf(vmConf, "1.1.0", "lower0Mvp0", fmt.Sprintf(`,"mac":%q`, vmMAC))
		run := func(cmd, stdin string) (string, error) {
			c := exec.Command(filepath.Join(bin, rolePlugin))
			c.Env = append(os.Environ(), "CNI_COMMAND="+cmd, "CNI_CONTAINERID=c1", "CNI_NETNS="+e.cont.Path,
				"CNI_IFNAME=net1", "CNI_PATH="+bin)
			c.Stdin = strings.NewReader(stdin)
			var stdout, stderr bytes.Buffer
			c.Stdout, c.Stderr = &stdout, &stderr
			err := c.Run()
			if err != nil {
				err = fmt.Errorf("%w: stdout %s stderr %s", err, stdout.String(), stderr.String())
			}
			return stdout.String(), err
		}
		// The binary's host namespace is its own: run it inside e.host.
		var out string
		require.NoError(t, e.host.Do(func() error {
			var err error
			out, err = run("ADD", conf)
			return err
		}))
		res, err := current.NewResult([]byte(out))
		require.NoError(t, err)
		r := res.(*current.Result)
		require.Equal(t, vmMAC, r.Interfaces[0].Mac)
		require.NoError(t, e.host.Do(func() error {
			_, err := run("CHECK", string(withPrev(t, e.args(conf, "net1", ""), []byte(out)).StdinData))
			return err
		}))
		_, err = run("ADD", conf)
		require.ErrorContains(t, err, "already exists")
		_, err = run("DEL", conf)
		require.NoError(t, err)
		require.Empty(t, linkNames(t, e.cont.Handle))
	})
}
