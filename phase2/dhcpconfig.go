package phase2

import (
	"errors"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/phase2/dhcp"
)

// DHCPConfig is the configuration of the DHCP server of one interface, the
// one code path of the launcher's hook (prestart, at start and on a
// hot-plug) and the binding sidecar: the item's binding says what it
// serves ([binding.DHCPServer]) from rec (the item's record, or a fresher
// one), resolvConf gives the DNS servers and search domains. It is nil,
// without error, when the binding serves no DHCP or the record has no IPAM.
func DHCPConfig(vmi *api.VMI, it Item, rec *cache.Interface, resolvConf []byte) (*dhcp.Config, error) {
	ds, ok := it.Binding.(binding.DHCPServer)
	if !ok {
		return nil, nil
	}
	svc := ds.DHCPService(rec)
	if !svc.Serves() {
		return nil, nil
	}
	cfg, err := dhcp.NewConfigFor(vmi, it.Pair.Interface, rec, resolvConf,
		dhcp.Service{IPv4: svc.IPv4, IPv6: svc.IPv6, RequireMAC: svc.RequireMAC})
	if errors.Is(err, dhcp.ErrIPAMDisabled) {
		return nil, nil
	}
	return cfg, err
}
