package domxml

import "libvirt.org/go/libvirtxml"

// InterfaceType is how an <interface> is attached, as its <source> says:
// "bridge", "ethernet", "direct", "user", "vhostuser" or "network"; ""
// when it has no source, "other" for any other source. Live updates and
// migration compare a running device with a rendered one by it.
func InterfaceType(i *libvirtxml.DomainInterface) string {
	switch s := i.Source; {
	case s == nil:
		return ""
	case s.Bridge != nil:
		return "bridge"
	case s.Ethernet != nil:
		return "ethernet"
	case s.Direct != nil:
		return "direct"
	case s.User != nil:
		return "user"
	case s.VHostUser != nil:
		return "vhostuser"
	case s.Network != nil:
		return "network"
	}
	return "other"
}
