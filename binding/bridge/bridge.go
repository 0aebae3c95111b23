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

// ServesDHCP is true: the launcher serves the record's addresses to the
// guest by DHCP on the bridge (none without IPAM).
func (Binding) ServesDHCP(rec *cache.Interface) bool { return rec != nil }
