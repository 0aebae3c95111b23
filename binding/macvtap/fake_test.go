package macvtap

import (
	"context"
	"testing"

	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/netdriver/netdrivertest"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/netdriver"
)

// TestWithNetdriverFake runs the phase1 half against the shared stateful
// fake: setup twice, then cleanup twice.
func TestWithNetdriverFake(t *testing.T) {
	f := netdrivertest.NewFake()
	f.SeedPodLink(netdrivertest.PodLink{Name: "net1", Type: netdriver.TypeMacvtap, MAC: mustMAC("02:aa:bb:cc:dd:01"), MTU: 9000})
	v, p := vmi(t, func(i *api.Interface) { i.MacAddress = "02:00:00:00:00:42" })
	in := input(v, p)
	ctx := context.Background()

	link, err := Binding{}.Discover(ctx, f, in)
	require.NoError(t, err)
	require.Equal(t, 9000, link.MTU)
	rec, err := Binding{}.Plan(in, link)
	require.NoError(t, err)
	require.Equal(t, cache.MustParseMAC("02:00:00:00:00:42"), rec.MAC)
	require.NotZero(t, rec.Ifindex)

	require.NoError(t, Binding{}.Prepare(ctx, f, in, link, rec))
	require.NoError(t, Binding{}.Prepare(ctx, f, in, link, rec))
	require.Len(t, f.Calls(), 1, "%v", f.Calls())
	l, err := f.LinkByName("net1")
	require.NoError(t, err)
	require.Equal(t, "02:00:00:00:00:42", l.MAC.String())

	require.NoError(t, Binding{}.Cleanup(ctx, f, in, link, rec))
	require.NoError(t, Binding{}.Cleanup(ctx, f, in, link, rec))
	l, err = f.LinkByName("net1")
	require.NoError(t, err)
	require.Equal(t, "02:aa:bb:cc:dd:01", l.MAC.String())
	require.Len(t, f.Calls(), 2, "%v", f.Calls())
}
