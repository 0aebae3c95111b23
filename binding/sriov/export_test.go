package sriov

import "github.com/virtnet/virtnet/api"

// Addresses returns the host PCI address of every SR-IOV interface of
// vmi, keyed by interface name, following the package doc's precedence.
// An interface whose address cannot be found is left out and its error
// is in the returned map of errors; an unparsable network-status
// annotation fails every interface.
func Addresses(vmi *api.VMI, env map[string]string, netInfo []byte) (map[string]string, map[string]error) {
	as := allocate(vmi, env, netInfo)
	addrs, errs := map[string]string{}, map[string]error{}
	for name, a := range as {
		if a.err != nil {
			errs[name] = a.err
		} else {
			addrs[name] = a.address
		}
	}
	return addrs, errs
}
