package passt

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/netdriver"
)

// The sysctls Prepare may widen, as netdriver keys under /proc/sys/net.
const (
	PingGroupRangeKey        = "ipv4/ping_group_range"
	UnprivilegedPortStartKey = "ipv4/ip_unprivileged_port_start"
)

// Prepare widens net.ipv4.ping_group_range and lowers
// net.ipv4.ip_unprivileged_port_start as passt needs (see the package
// doc): `sysctl -w net.ipv4.ping_group_range="LO HI"`,
// `sysctl -w net.ipv4.ip_unprivileged_port_start=PORT`.
func (b Binding) Prepare(ctx context.Context, d netdriver.Driver, in binding.Input, link *cache.Link, rec *cache.Interface) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	name := in.Pair.Interface.Name
	gid := b.pingGroup(in)
	cur, err := d.Sysctl(PingGroupRangeKey)
	if err != nil {
		return sysctlError(PingGroupRangeKey, "", err)
	}
	f := strings.Fields(cur)
	var lo, hi int
	if len(f) == 2 {
		lo, err = strconv.Atoi(f[0])
		if err == nil {
			hi, err = strconv.Atoi(f[1])
		}
	} else {
		err = errors.New("want two group IDs")
	}
	if err != nil {
		// Not the kernel's "LO\tHI": replace it with KubeVirt's value.
		in.Logger.Warn("unparsable ping_group_range, replacing it", "interface", name, "value", cur, "error", err)
		lo, hi = 1, 0
	}
	if gid < lo || gid > hi {
		want := fmt.Sprintf("%d %d", gid, gid)
		if lo <= hi { // a non-empty range: extend it
			want = fmt.Sprintf("%d %d", min(lo, gid), max(hi, gid))
		}
		in.Logger.Info("widening ping_group_range for passt", "interface", name, "from", cur, "to", want)
		if err := d.SetSysctl(PingGroupRangeKey, want); err != nil {
			return sysctlError(PingGroupRangeKey, want, err)
		}
	}

	low := lowestPort(in.Pair.Interface)
	cur, err = d.Sysctl(UnprivilegedPortStartKey)
	if err != nil {
		return sysctlError(UnprivilegedPortStartKey, "", err)
	}
	start, err := strconv.Atoi(strings.TrimSpace(cur))
	if err != nil {
		return sysctlError(UnprivilegedPortStartKey, cur, err)
	}
	if start > low {
		want := strconv.Itoa(low)
		in.Logger.Info("lowering ip_unprivileged_port_start for passt", "interface", name, "from", start, "to", low)
		if err := d.SetSysctl(UnprivilegedPortStartKey, want); err != nil {
			return sysctlError(UnprivilegedPortStartKey, want, err)
		}
	}
	return nil
}

// Cleanup does nothing (see the package doc).
func (Binding) Cleanup(ctx context.Context, d netdriver.Driver, in binding.Input, link *cache.Link, rec *cache.Interface) error {
	return nil
}
