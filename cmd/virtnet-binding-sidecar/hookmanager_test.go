//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/kubevirt/hookapi/info"
	"github.com/virtnet/virtnet/kubevirt/hookapi/v1alpha3"
	"github.com/virtnet/virtnet/kubevirt/kvplugin"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// hookTranscript is what was recorded between KubeVirt's hook manager and
// the sidecar (testdata/README.md says how and when): the manager's steps and every gRPC call as it
// went over the socket.
type hookTranscript struct {
	Steps []string   `json:"steps"`
	Calls []hookCall `json:"calls"`
}

// hookCall is one unary call: the request headers the client sent, the
// request and response messages as protobuf bytes, the grpc-status.
type hookCall struct {
	Conn           int               `json:"conn"`
	Stream         uint32            `json:"stream"`
	RequestHeaders map[string]string `json:"requestHeaders"`
	Request        []byte            `json:"request"`
	Status         string            `json:"grpcStatus"`
	Response       []byte            `json:"response"`
}

// rawCodec sends and receives messages as the bytes they are on the wire.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *v.(*[]byte), nil }
func (rawCodec) Unmarshal(b []byte, v any) error {
	*v.(*[]byte) = append([]byte(nil), b...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// messagesFor returns fresh request and response messages of virtnet's
// protos for a full method name, or fails on a method virtnet does not
// define (a renamed package, service or method).
func messagesFor(t *testing.T, path string) (req, res proto.Message) {
	switch path {
	case info.Info_Info_FullMethodName:
		return &info.InfoParams{}, &info.InfoResult{}
	case v1alpha3.Callbacks_OnDefineDomain_FullMethodName:
		return &v1alpha3.OnDefineDomainParams{}, &v1alpha3.OnDefineDomainResult{}
	case v1alpha3.Callbacks_PreCloudInitIso_FullMethodName:
		return &v1alpha3.PreCloudInitIsoParams{}, &v1alpha3.PreCloudInitIsoResult{}
	case v1alpha3.Callbacks_Shutdown_FullMethodName:
		return &v1alpha3.ShutdownParams{}, &v1alpha3.ShutdownResult{}
	}
	t.Fatalf("KubeVirt called %q, a method virtnet's protos do not define", path)
	return nil, nil
}

// decodeStrict decodes b into m and fails on a field m does not know (a
// field number that drifted).
func decodeStrict(t *testing.T, what string, b []byte, m proto.Message) {
	t.Helper()
	require.NoError(t, proto.Unmarshal(b, m), what)
	var unknown []string
	var walk func(pm proto.Message, at string)
	walk = func(pm proto.Message, at string) {
		r := pm.ProtoReflect()
		if len(r.GetUnknown()) > 0 {
			unknown = append(unknown, at)
		}
		// HookPoint lists are the only nested messages.
		if res, ok := pm.(*info.InfoResult); ok {
			for _, hp := range res.GetHookPoints() {
				walk(hp, at+".hookPoints")
			}
		}
	}
	walk(m, what)
	require.Empty(t, unknown, "fields unknown to virtnet's protos")
	// Same fields, same numbers, same encoding: virtnet's messages encode
	// to the bytes KubeVirt's put on the wire.
	again, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	require.NoError(t, err)
	require.True(t, bytes.Equal(b, again), "%s: re-encoded with virtnet's protos: %x, on the wire %x", what, again, b)
}

// TestKubeVirtHookManager replays, against the sidecar binary over its unix
// socket, the exchange KubeVirt v1.9.0's own hook manager (pkg/hooks, as
// virt-launcher runs it) had with it: the same calls in the same order on
// a new connection each, with the same headers and the request bytes
// KubeVirt sent. Every recorded message decodes with virtnet's protos
// without unknown fields and re-encodes to the same bytes; the sidecar's
// answers equal the recorded ones (the domain compared as libvirt XML),
// the hotplug placeholders KubeVirt adds are returned untouched, the final
// domain passes libvirt's checks, and after Shutdown the sidecar exits.
func TestKubeVirtHookManager(t *testing.T) {
	testutil.RequireRoot(t)
	setpriv := needBinary(t, "setpriv")
	for _, tc := range []struct {
		plugin, method string
	}{
		{"virtnet-masquerade", api.BindingMasquerade},
		{"virtnet-slirp", api.BindingSlirp},
	} {
		t.Run(tc.plugin, func(t *testing.T) {
			pod := testutil.NewPod(t)
			if tc.method != api.BindingSlirp {
				prepare(t, pod, tc.method)
			}
			dir := filepath.Join("testdata", "kubevirt-v1.9.0", "hooks-"+strings.TrimPrefix(tc.plugin, "virtnet-"))
			sc := startSidecar(t, setpriv, pod, tc.plugin)
			if tc.method == api.BindingSlirp {
				// The transcript was recorded while the sidecar gave
				// slirp KubeVirt's fallback search domain whatever the
				// pod's resolv.conf said: a resolv.conf without search
				// domains gets that fallback (cluster.local) now too.
				require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(sc.hooks), "resolv.conf"), []byte("nameserver 10.96.0.10\n"), 0o644))
			}
			replayHooks(t, sc, dir)
		})
	}
}

func replayHooks(t *testing.T, sc *runningSidecar, dir string) {
	b, err := os.ReadFile(filepath.Join(dir, "hooks-transcript.json"))
	require.NoError(t, err)
	var tr hookTranscript
	require.NoError(t, json.Unmarshal(b, &tr))
	require.NotEmpty(t, tr.Calls)
	require.Equal(t, info.Info_Info_FullMethodName, tr.Calls[0].RequestHeaders[":path"], "virt-launcher starts with Info")
	require.Equal(t, v1alpha3.Callbacks_Shutdown_FullMethodName, tr.Calls[len(tr.Calls)-1].RequestHeaders[":path"], "and ends with Shutdown")

	conns := map[int]*grpc.ClientConn{}
	var lastDomain []byte
	defines := 0
	for i, c := range tr.Calls {
		path := c.RequestHeaders[":path"]
		require.Equal(t, "application/grpc", c.RequestHeaders["content-type"], "call %d", i)
		require.Equal(t, "0", c.Status, "call %d %s: KubeVirt got an error from the sidecar when recorded", i, path)
		req, want := messagesFor(t, path)
		decodeStrict(t, path+" request", c.Request, req)
		decodeStrict(t, path+" recorded response", c.Response, want)

		conn := conns[c.Conn]
		if conn == nil {
			conn, err = grpc.NewClient("unix://"+sc.sock, grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithAuthority(c.RequestHeaders[":authority"]))
			require.NoError(t, err)
			t.Cleanup(func() { conn.Close() })
			conns[c.Conn] = conn
		}
		timeout := time.Minute
		if path == info.Info_Info_FullMethodName {
			timeout = time.Second // the manager's Info deadline
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		reqBytes := c.Request
		var resBytes []byte
		err := conn.Invoke(ctx, path, &reqBytes, &resBytes, grpc.ForceCodec(rawCodec{}))
		cancel()
		require.NoError(t, err, "call %d %s (%v); sidecar log:\n%s", i, path, status.Code(err), sc.logs)
		_, got := messagesFor(t, path)
		decodeStrict(t, path+" response", resBytes, got)

		switch r := got.(type) {
		case *v1alpha3.OnDefineDomainResult:
			defines++
			var wantDom, gotDom, inDom libvirtxml.Domain
			require.NoError(t, wantDom.Unmarshal(string(want.(*v1alpha3.OnDefineDomainResult).GetDomainXML())))
			require.NoError(t, gotDom.Unmarshal(string(r.GetDomainXML())))
			require.Equal(t, wantDom, gotDom, "call %d: the domain returned to KubeVirt", i)
			require.NoError(t, inDom.Unmarshal(string(req.(*v1alpha3.OnDefineDomainParams).GetDomainXML())))
			require.Equal(t, placeholders(inDom), placeholders(gotDom), "call %d: hotplug placeholders untouched", i)
			lastDomain = r.GetDomainXML()
		default:
			require.True(t, proto.Equal(want, got), "call %d %s: %v, recorded %v", i, path, got, want)
		}
	}
	require.NotZero(t, defines, "KubeVirt called OnDefineDomain")
	final, err := os.ReadFile(filepath.Join(dir, "hooks-domain.xml"))
	require.NoError(t, err)
	require.Equal(t, strings.TrimSpace(string(final)), strings.TrimSpace(string(lastDomain)),
		"hooks-domain.xml is what KubeVirt's manager returned: the last OnDefineDomain answer")
	validateKubeVirt(t, lastDomain)

	select {
	case err := <-sc.exited:
		require.NoError(t, err, "the sidecar exits after Shutdown")
	case <-time.After(30 * time.Second):
		t.Fatal("sidecar still running 30 s after Shutdown")
	}
	_, err = os.Stat(sc.sock)
	require.ErrorIs(t, err, os.ErrNotExist, "socket removed")
}

// placeholders returns the hotplug placeholder interfaces of a domain
// (target dev placeholder-N).
func placeholders(d libvirtxml.Domain) []libvirtxml.DomainInterface {
	var out []libvirtxml.DomainInterface
	if d.Devices == nil {
		return nil
	}
	for _, di := range d.Devices.Interfaces {
		if di.Target != nil && strings.HasPrefix(di.Target.Dev, "placeholder-") {
			out = append(out, di)
		}
	}
	return out
}

// TestKubeVirtConverterDomains checks the domains KubeVirt v1.9.0's
// converter rendered for the test VMIs (testdata/kubevirt-v1.9.0): libvirt
// defines each and, but for KubeVirt's empty SMBIOS groups, each validates
// against libvirt's schema; KubeVirt renders no interface for a binding
// plugin's, and the VMI as virt-launcher marshals it resolves to the
// binding and the pod interface KubeVirt named (eth0 for the pod network,
// its pod<hash> of the network name for a Multus one, which is
// api.HashedPodInterface's).
func TestKubeVirtConverterDomains(t *testing.T) {
	for _, tc := range []struct {
		name, method, podIface string
	}{
		{"bridge", api.BindingBridge, "eth0"},
		{"masquerade", api.BindingMasquerade, "eth0"},
		{"slirp", api.BindingSlirp, "eth0"},
		{"bridge-secondary", api.BindingBridge, "pod16477688c0e"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join("testdata", "kubevirt-v1.9.0")
			domain, err := os.ReadFile(filepath.Join(dir, "domain-"+tc.name+".xml"))
			require.NoError(t, err)
			validateKubeVirt(t, domain)
			var dom libvirtxml.Domain
			require.NoError(t, dom.Unmarshal(string(domain)))
			require.Empty(t, dom.Devices.Interfaces, "KubeVirt leaves a plugin's interface to the plugin")

			vmiJSON, err := os.ReadFile(filepath.Join(dir, "vmi-"+tc.name+".json"))
			require.NoError(t, err)
			res, err := kvplugin.Resolve(vmiJSON, func(n string) (string, bool) { m, ok := kvplugin.Plugins()[n]; return m, ok })
			require.NoError(t, err)
			require.Len(t, res.Pairs, 1)
			require.Equal(t, tc.method, res.Pairs[0].Binding())
			require.Equal(t, tc.podIface, res.Pairs[0].PodInterface)
			if tc.podIface != "eth0" {
				require.Equal(t, tc.podIface, api.HashedPodInterface(res.Pairs[0].Network.Name))
			}
		})
	}
}
