package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/phase2/prestart"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// TestEmbeddedCache checks that the embedded records are what phase1
// writes for the embedded VMI on the simulated pod (-update, testutil's
// flag, rewrites them).
func TestEmbeddedCache(t *testing.T) {
	vmi, err := api.Load(defaultVMI)
	require.NoError(t, err)
	dir := t.TempDir()
	store, err := cache.New(dir)
	require.NoError(t, err)
	require.NoError(t, simulatePhase1(context.Background(), vmi, store, nil))

	if testutil.Update() {
		require.NoError(t, os.RemoveAll("embedded/cache"))
		require.NoError(t, os.CopyFS("embedded/cache", os.DirFS(dir)))
	}
	want := readTree(t, "embedded/cache")
	require.Equal(t, want, readTree(t, dir), "embedded/cache is stale: go test ./examples/virtnet-xml -run TestEmbeddedCache -update")
}

func readTree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		out[rel] = string(data)
		return err
	}))
	return out
}

func runMain(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(context.Background(), args, &o, &e)
	return o.String(), e.String(), code
}

func validateXML(t *testing.T, xml string) {
	t.Helper()
	var dom libvirtxml.Domain
	require.NoError(t, dom.Unmarshal(xml))
	testutil.ValidateDomainXML(t, xml)
}

func writeVMI(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "vmi.yaml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

const masqueradeVMI = `
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: web, namespace: shop, uid: 11111111-2222-4333-8444-555555555555}
spec:
  template:
    spec:
      domain:
        devices:
          interfaces:
          - {name: default, masquerade: {}, ports: [{port: 80}, {port: 443}]}
          - {name: backend, bridge: {}}
      networks:
      - {name: default, pod: {}}
      - {name: backend, multus: {networkName: backend-net}}
`

// TestRun: the default interface type follows the process's
// CAP_NET_ADMIN (type='bridge' with it, the tap phase1 made without), so
// the test expects what the process it runs in gets: as root and as any
// user.
func TestRun(t *testing.T) {
	vmiFile := writeVMI(t, masqueradeVMI)
	netAdmin, err := prestart.HasNetAdmin()
	require.NoError(t, err)
	byCap := func(bridge, ethernet string) string {
		if netAdmin {
			return bridge
		}
		return ethernet
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string // substrings of stdout
	}{
		{name: "embedded", want: []string{byCap(`<interface type="bridge">`, `<interface type="ethernet">`),
			byCap(`<source bridge="k6t-eth0">`, `<target dev="tap0" managed="no">`), `<mtu size="1440">`, `<alias name="ua-default">`}},
		{name: "embedded ethernet", args: []string{"-interface-type", "ethernet"}, want: []string{`<interface type="ethernet">`, `<target dev="tap0" managed="no">`}},
		{name: "vmi on simulated pod", args: []string{"-vmi", vmiFile}, want: []string{`<name>shop_web</name>`,
			byCap(`<source bridge="k6t-net1">`, `<target dev="tap1" managed="no">`), `<alias name="ua-backend">`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runMain(t, tc.args...)
			require.Equal(t, 0, code, errOut)
			for _, w := range tc.want {
				require.Contains(t, out, w)
			}
			validateXML(t, out)
		})
	}
}

func TestRunPlan(t *testing.T) {
	out, errOut, code := runMain(t, "-vmi", writeVMI(t, masqueradeVMI), "-plan")
	require.Equal(t, 0, code, errOut)
	for _, w := range []string{
		`[0] interface "default": masquerade binding`,
		"DNAT TCP 80, 443 → 10.0.2.2",
		"k6t-eth0", "tap0", "mtu 1440", "10.244.1.7/24",
		`[1] interface "backend": bridge binding`, "net1-nic", "k6t-net1", "192.168.2.7/24",
	} {
		require.Contains(t, out, w)
	}
}

// TestRunPlanNAT: -plan lists what the masquerade NAT forwards as phase1
// programs it: portRanges' ranges only (not "all ports"), each protocol
// on its own; no ports, every port; Istio, ssh alone.
func TestRunPlanNAT(t *testing.T) {
	for _, tc := range []struct {
		name, iface, annotations, want string
	}{
		{"portRanges", "{name: default, masquerade: {}, portRanges: [{protocol: TCP, start: 8000, end: 8010}, {protocol: UDP, start: 53, end: 53}, {protocol: TCP, start: 9000, end: 9001}]}", "",
			"DNAT TCP 8000-8010, 9000-9001, UDP 53 → 10.0.2.2"},
		{"all", "{name: default, masquerade: {}}", "", "DNAT all ports → 10.0.2.2"},
		{"istio", "{name: default, masquerade: {}}", "sidecar.istio.io/inject: \"true\"", "DNAT TCP 22 → 10.0.2.2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmi := "apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nmetadata: {name: web, annotations: {" + tc.annotations + "}}\n" +
				"spec:\n  domain:\n    devices:\n      interfaces: [" + tc.iface + "]\n  networks: [{name: default, pod: {}}]\n"
			out, errOut, code := runMain(t, "-vmi", writeVMI(t, vmi), "-plan")
			require.Equal(t, 0, code, errOut)
			require.Contains(t, out, tc.want)
			if tc.name != "all" {
				require.NotContains(t, out, "all ports")
			}
		})
	}
}

func TestRunOutputFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "out.xml")
	out, errOut, code := runMain(t, "-o", f)
	require.Equal(t, 0, code, errOut)
	require.Empty(t, out)
	data, err := os.ReadFile(f)
	require.NoError(t, err)
	validateXML(t, string(data))
}

func TestRunBadInput(t *testing.T) {
	bad := writeVMI(t, `
kind: VirtualMachineInstance
metadata: {name: Bad_Name, uid: u1}
spec:
  domain:
    devices:
      interfaces:
      - {name: default, bridge: {}, macAddress: "zz:00", ports: [{port: 0}]}
  networks:
  - {name: default, pod: {}}
  - {name: extra, multus: {}}
`)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{name: "invalid VMI", args: []string{"-vmi", bad}, want: []string{
			"metadata.name", "spec.domain.devices.interfaces[0].macAddress",
			"spec.domain.devices.interfaces[0].ports[0].port", "spec.networks[1].multus.networkName",
		}},
		{name: "missing file", args: []string{"-vmi", filepath.Join(t.TempDir(), "nope.yaml")}, want: []string{"nope.yaml"}},
		{name: "bad interface type", args: []string{"-interface-type", "macvtap"}, want: []string{"-interface-type"}},
		{name: "stray argument", args: []string{"extra"}, want: []string{"unexpected arguments"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runMain(t, tc.args...)
			require.Equal(t, 2, code)
			require.Empty(t, out)
			for _, w := range tc.want {
				require.Contains(t, errOut, w)
			}
		})
	}
}

func TestRunMissingCache(t *testing.T) {
	_, errOut, code := runMain(t, "-cache", t.TempDir())
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `interface "default"`)
	require.Contains(t, errOut, "has phase1 run?")
}

// TestBinary builds the example as the README runs it and checks its XML.
func TestBinary(t *testing.T) {
	testutil.SkipCoveredUnderRace(t, "its time goes to go build and to a binary built without -race, which the race detector does not see")
	if testing.Short() {
		t.Skip("builds a binary")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		testutil.Skip(t, "no go command in PATH to build the example with")
	}
	bin := filepath.Join(t.TempDir(), "virtnet-xml")
	out, err := exec.Command(gobin, "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build:\n%s", out)

	cmd := exec.Command(bin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	xml, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	validateXML(t, string(xml))

	cmd = exec.Command(bin, "-vmi", writeVMI(t, "kind: VirtualMachineInstance\nmetadata: {name: x}\nspec: {networks: [{name: a}]}\n"))
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 2, ee.ExitCode())
	require.True(t, strings.Contains(stderr.String(), "spec.networks[0]"), stderr.String())
}
