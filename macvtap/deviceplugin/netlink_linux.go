package deviceplugin

import (
	"context"
	"fmt"

	"github.com/containernetworking/plugins/pkg/netlinksafe"
	"github.com/vishvananda/netlink"

	"github.com/virtnet/virtnet/internal/nlhandle"
)

// NetlinkLister lists links over rtnetlink in one network namespace. It
// retries dumps interrupted by concurrent link changes (netlinksafe).
type NetlinkLister struct {
	h netlinksafe.Handle
}

// NewNetlinkLister opens a netlink socket in the network namespace at
// nsPath (for example /proc/1/ns/net, the host's namespace seen from a
// privileged pod), or in the caller's namespace when nsPath is "". Close it
// when done.
func NewNetlinkLister(nsPath string) (*NetlinkLister, error) {
	h, err := nlhandle.Open(nsPath)
	if err != nil {
		return nil, fmt.Errorf("macvtap discovery: open netns %q: %w", nsPath, err)
	}
	return &NetlinkLister{h: netlinksafe.Handle{Handle: h}}, nil
}

// Close releases the netlink socket.
func (n *NetlinkLister) Close() error {
	n.h.Close()
	return nil
}

// Links implements [LinkLister] (`ip -d link show`).
func (n *NetlinkLister) Links(ctx context.Context) ([]Link, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	links, err := n.h.LinkList()
	if err != nil {
		return nil, fmt.Errorf("macvtap discovery: list links: %w", err)
	}
	out := make([]Link, 0, len(links))
	for _, l := range links {
		a := l.Attrs()
		kind := l.Type()
		if _, physical := l.(*netlink.Device); physical {
			// netlink reports "device" for links without IFLA_INFO_KIND.
			kind = ""
		}
		out = append(out, Link{Name: a.Name, Kind: kind, EncapType: a.EncapType, Flags: a.Flags, MasterIndex: a.MasterIndex})
	}
	return out, nil
}
