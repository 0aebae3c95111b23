package bridge

import (
	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/cache"
)

// Binding is the bridge binding method. Its zero value is ready to use.
type Binding struct{}

var _ binding.DHCPServer = Binding{}

// Method is "bridge".
func (Binding) Method() string { return api.BindingBridge }

// DHCPService implements [binding.DHCPServer]: DHCPv4 with the pod's
// address, to the VM's MAC only (the bridge also carries the pod's other
// side); the pod's IPv6 address is not served, as in KubeVirt.
func (Binding) DHCPService(rec *cache.Interface) binding.DHCPService {
	if rec == nil {
		return binding.DHCPService{}
	}
	return binding.DHCPService{IPv4: true, RequireMAC: true}
}
