package kvplugin

import (
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"

	"github.com/virtnet/virtnet/internal/names"
	"github.com/virtnet/virtnet/internal/nlhandle"
)

// WriteAlias sets the alias of a link in the network namespace at nsPath
// ("" is the caller's), like `ip link set dev <link> alias <alias>`. It
// needs CAP_NET_ADMIN there. An unchanged alias is not rewritten.
func WriteAlias(nsPath, link, alias string) error {
	if len(alias) > MaxAlias {
		return fmt.Errorf("%w: %d bytes, a link alias holds %d", ErrRecordTooLarge, len(alias), MaxAlias)
	}
	h, err := nlhandle.Open(nsPath)
	if err != nil {
		return err
	}
	defer h.Close()
	l, err := h.LinkByName(link)
	if err != nil {
		return fmt.Errorf("%s: %w: %w", link, ErrNoLink, err)
	}
	if l.Attrs().Alias == alias {
		return nil
	}
	if err := h.LinkSetAlias(l, alias); err != nil {
		return fmt.Errorf("set alias of %s: %w", link, err)
	}
	return nil
}

// ReadAlias returns a link's alias and type in the network namespace at
// nsPath ("" is the caller's). It needs no privileges.
func ReadAlias(nsPath, link string) (alias, typ string, err error) {
	h, err := nlhandle.Open(nsPath)
	if err != nil {
		return "", "", err
	}
	defer h.Close()
	l, err := h.LinkByName(link)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return "", "", fmt.Errorf("%s: %w", link, ErrNoLink)
		}
		return "", "", fmt.Errorf("%s: %w", link, err)
	}
	return l.Attrs().Alias, l.Type(), nil
}

// ReadRecord reads the hand-off record of binding on podIface from the
// alias of its tap, in the namespace at nsPath ("" is the caller's). The
// tap must be a tuntap link: a record on a link of another type is
// foreign. primary tells the pod interface of the VM's primary network
// (see [api.Pair.Primary]).
func ReadRecord(nsPath, binding, podIface string, primary bool) (*RecordSource, error) {
	tap := names.Tap(podIface, primary)
	alias, typ, err := ReadAlias(nsPath, tap)
	if err != nil {
		return nil, err
	}
	if typ != "tuntap" {
		return nil, fmt.Errorf("%s is a %s link, not virtnet's tap: %w", tap, typ, ErrForeignRecord)
	}
	rec, err := Decode(alias, binding, podIface, primary)
	if err != nil {
		return nil, fmt.Errorf("alias of %s: %w", tap, err)
	}
	// A pod an earlier release's CNI plugin prepared has its bridge (and
	// NIC) under that release's names.
	if old := names.LegacyBridge(podIface); rec.Bridge != "" && old != rec.Bridge {
		if _, _, err := ReadAlias(nsPath, rec.Bridge); errors.Is(err, ErrNoLink) {
			if _, _, err := ReadAlias(nsPath, old); err == nil {
				rec.Bridge = old
				if rec.NIC != "" {
					rec.NIC = names.LegacyNIC(podIface)
				}
			}
		}
	}
	return &RecordSource{Link: tap, Record: rec}, nil
}
