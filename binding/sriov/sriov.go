package sriov

import (
	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/domxml"
)

// Binding is the sriov binding method. Its zero value is ready to use.
type Binding struct {
	// Phase1 has nothing to do in the pod namespace.
	binding.NoKernelWork
}

var _ binding.DeviceAliaser = Binding{}

// Method is "sriov".
func (Binding) Method() string { return api.BindingSRIOV }

// DeviceAlias is the alias of the VF's <hostdev>, "ua-sriov-<iface>"
// (domxml.SRIOVAliasPrefix), which tells SR-IOV host devices apart.
func (Binding) DeviceAlias(iface string) string {
	return domxml.Alias(domxml.SRIOVAliasPrefix + iface).Name
}
