package masquerade

import (
	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/cache"
)

// Binding is the masquerade binding method. Its zero value is ready to use.
type Binding struct{}

var _ binding.DHCPServer = Binding{}

// Method is "masquerade".
func (Binding) Method() string { return api.BindingMasquerade }

// DHCPService implements [binding.DHCPServer]: DHCPv4 and, with an IPv6
// VM address, DHCPv6 and router advertisements, on a bridge the VM has to
// itself.
func (Binding) DHCPService(rec *cache.Interface) binding.DHCPService {
	if rec == nil {
		return binding.DHCPService{}
	}
	return binding.DHCPService{IPv4: true, IPv6: true}
}
