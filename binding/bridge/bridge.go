package bridge

import (
	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/cache"
)

// Binding is the bridge binding method. Its zero value is ready to use.
type Binding struct{ phase1 }

// phase1 is what the bridge binding and [ManagedTap] share: the bridge,
// the tap and, with IPAM, the dummy keeping the pod's addresses.
type phase1 struct{}

var _ binding.DHCPServer = Binding{}

// Method is "bridge".
func (Binding) Method() string { return api.BindingBridge }

// DHCPService implements [binding.DHCPServer]: DHCPv4 with the pod's
// IPv4 address and, when the pod has a global IPv6 address, DHCPv6 (the
// address as a /128) and router advertisements naming the pod's IPv6
// router, to the VM's MAC only (the bridge also carries the pod's other
// side). KubeVirt serves no IPv6 on the bridge binding.
func (Binding) DHCPService(rec *cache.Interface) binding.DHCPService {
	if rec == nil {
		return binding.DHCPService{}
	}
	return binding.DHCPService{IPv4: true, IPv6: true, RequireMAC: true}
}
