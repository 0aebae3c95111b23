package prestart_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/domxml"
	"github.com/virtnet/virtnet/phase2/prestart"
)

const slirpYAML = `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: testvm, namespace: ns1, uid: ` + uid + `}
spec:
  domain:
    devices:
      interfaces: [{name: default, slirp: {}, ports: [{port: 22}]}]
  networks: [{name: default, pod: {}}]
`

// networkHook is a hook running the network step alone for vmi, with the
// pod's resolv.conf holding resolv.
func networkHook(t *testing.T, yaml, resolv string) *prestart.Hook {
	t.Helper()
	root := t.TempDir()
	vmi, err := api.Load([]byte(yaml))
	require.NoError(t, err)
	store, err := cache.New(filepath.Join(root, "cache"))
	require.NoError(t, err)
	dom, err := domxml.Build(vmi, domxml.Options{PrivateDir: filepath.Join(root, "private")})
	require.NoError(t, err)
	rc := filepath.Join(root, "resolv.conf")
	require.NoError(t, os.WriteFile(rc, []byte(resolv), 0o644))
	return &prestart.Hook{VMI: vmi, Domain: dom, Store: store, ResolvConf: rc, Steps: []prestart.Step{prestart.Network{}}}
}

// TestSlirpSearchDomains: the hook gives slirp the search domains of the
// pod's resolv.conf, one dnssearch= each, as KubeVirt v0.53 renders them.
func TestSlirpSearchDomains(t *testing.T) {
	h := networkHook(t, slirpYAML, "search ns1.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n")
	r, err := h.Run(context.Background())
	require.NoError(t, err)
	require.NoError(t, r.Stop())
	require.NotNil(t, h.Domain.QEMUCommandline)
	var args []string
	for _, a := range h.Domain.QEMUCommandline.Args {
		args = append(args, a.Value)
	}
	require.Contains(t, args, "user,id=hostua-default,net=10.0.2.0/24,dnssearch=ns1.svc.cluster.local,"+
		"dnssearch=svc.cluster.local,dnssearch=cluster.local,hostfwd=tcp::22-:22", strings.Join(args, " "))

	// A search domain that would smuggle a QEMU option in is refused.
	h = networkHook(t, slirpYAML, "search a.example,hostfwd=tcp::2222-:22\n")
	_, err = h.Run(context.Background())
	require.ErrorContains(t, err, `resolv.conf search domain "a.example,hostfwd=tcp::2222-:22" is not a DNS name`)
}
