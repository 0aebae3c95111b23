package plugin

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/macvtap/cniconfig"
)

// TestIPAMExec covers the IPAM plugin runner that replaced the CNI
// library's invoke package: the plugin's printed CNI error comes back as
// a *types.Error with its code, its standard error is kept when it printed
// none, a result without cniVersion is read in the configuration's, and
// a plugin missing from CNI_PATH is a clear error.
func TestIPAMExec(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	}
	script("coded", `echo '{"cniVersion":"1.1.0","code":11,"msg":"try again"}'; exit 1`)
	script("stderr", `echo 'no range' >&2; exit 3`)
	script("noversion", `echo '{"ips":[{"address":"192.0.2.10/24"}]}'`)
	script("env", `[ "$CNI_COMMAND" = ADD ] && [ "$CNI_IFNAME" = net1 ] && [ -z "$CNI_FOREIGN" ] || exit 9; echo '{"cniVersion":"1.1.0"}'`)
	t.Setenv("CNI_FOREIGN", "from-the-parent") // dropped: CNI_* come from args only
	args := &skel.CmdArgs{ContainerID: "c", Netns: "/x", IfName: "net1", Path: dir, StdinData: []byte(`{"cniVersion":"1.0.0"}`)}
	p := &Plugin{}
	conf := func(typ string) *cniconfig.NetConf {
		c := &cniconfig.NetConf{}
		c.CNIVersion = "1.0.0"
		c.IPAM.Type = typ
		return c
	}
	ctx := context.Background()

	_, err := p.ipamAdd(ctx, conf("coded"), args)
	var ce *types.Error
	require.True(t, errors.As(err, &ce), "%v", err)
	require.Equal(t, uint(11), ce.Code)
	require.Equal(t, "try again", ce.Msg)

	err = p.ipamExec(ctx, "DEL", conf("stderr"), args)
	require.ErrorContains(t, err, "no range")
	require.ErrorContains(t, err, "exit status 3")

	res, err := p.ipamAdd(ctx, conf("noversion"), args)
	require.NoError(t, err)
	require.Equal(t, "192.0.2.10/24", res.IPs[0].Address.String())

	_, err = p.ipamAdd(ctx, conf("env"), args)
	require.NoError(t, err)

	_, err = p.ipamAdd(ctx, conf("absent"), args)
	require.ErrorContains(t, err, `failed to find plugin "absent"`)
}
