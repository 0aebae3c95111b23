//go:build linux

// One method of Driver per netdriver.Driver method; keep them in step.

package intercept

import (
	"net"
	"net/netip"

	"github.com/virtnet/virtnet/netdriver"
)

// LinkByName implements [netdriver.Driver] through the hooks.
func (d *Driver) LinkByName(name string) (*netdriver.Link, error) {
	c, err := d.before("LinkByName", false)
	if err != nil {
		var zero *netdriver.Link
		return zero, err
	}
	v, err := d.Inner.LinkByName(name)
	d.after(c, err)
	return v, err
}

// LinkList implements [netdriver.Driver] through the hooks.
func (d *Driver) LinkList() ([]*netdriver.Link, error) {
	c, err := d.before("LinkList", false)
	if err != nil {
		var zero []*netdriver.Link
		return zero, err
	}
	v, err := d.Inner.LinkList()
	d.after(c, err)
	return v, err
}

// AddBridge implements [netdriver.Driver] through the hooks.
func (d *Driver) AddBridge(name string, mtu int, mac net.HardwareAddr) error {
	c, err := d.before("AddBridge", true)
	if err != nil {
		return err
	}
	err = d.Inner.AddBridge(name, mtu, mac)
	d.after(c, err)
	return err
}

// AddDummy implements [netdriver.Driver] through the hooks.
func (d *Driver) AddDummy(name string) error {
	c, err := d.before("AddDummy", true)
	if err != nil {
		return err
	}
	err = d.Inner.AddDummy(name)
	d.after(c, err)
	return err
}

// AddTap implements [netdriver.Driver] through the hooks.
func (d *Driver) AddTap(tap netdriver.Tap) error {
	c, err := d.before("AddTap", true)
	if err != nil {
		return err
	}
	err = d.Inner.AddTap(tap)
	d.after(c, err)
	return err
}

// DeleteLink implements [netdriver.Driver] through the hooks.
func (d *Driver) DeleteLink(name string) error {
	c, err := d.before("DeleteLink", true)
	if err != nil {
		return err
	}
	err = d.Inner.DeleteLink(name)
	d.after(c, err)
	return err
}

// SetName implements [netdriver.Driver] through the hooks.
func (d *Driver) SetName(old, new string) error {
	c, err := d.before("SetName", true)
	if err != nil {
		return err
	}
	err = d.Inner.SetName(old, new)
	d.after(c, err)
	return err
}

// SetUp implements [netdriver.Driver] through the hooks.
func (d *Driver) SetUp(name string) error {
	c, err := d.before("SetUp", true)
	if err != nil {
		return err
	}
	err = d.Inner.SetUp(name)
	d.after(c, err)
	return err
}

// SetDown implements [netdriver.Driver] through the hooks.
func (d *Driver) SetDown(name string) error {
	c, err := d.before("SetDown", true)
	if err != nil {
		return err
	}
	err = d.Inner.SetDown(name)
	d.after(c, err)
	return err
}

// SetMAC implements [netdriver.Driver] through the hooks.
func (d *Driver) SetMAC(name string, mac net.HardwareAddr) error {
	c, err := d.before("SetMAC", true)
	if err != nil {
		return err
	}
	err = d.Inner.SetMAC(name, mac)
	d.after(c, err)
	return err
}

// SetMTU implements [netdriver.Driver] through the hooks.
func (d *Driver) SetMTU(name string, mtu int) error {
	c, err := d.before("SetMTU", true)
	if err != nil {
		return err
	}
	err = d.Inner.SetMTU(name, mtu)
	d.after(c, err)
	return err
}

// SetMaster implements [netdriver.Driver] through the hooks.
func (d *Driver) SetMaster(name, bridge string) error {
	c, err := d.before("SetMaster", true)
	if err != nil {
		return err
	}
	err = d.Inner.SetMaster(name, bridge)
	d.after(c, err)
	return err
}

// Learning implements [netdriver.Driver] through the hooks.
func (d *Driver) Learning(name string) (bool, error) {
	c, err := d.before("Learning", false)
	if err != nil {
		return false, err
	}
	v, err := d.Inner.Learning(name)
	d.after(c, err)
	return v, err
}

// SetLearning implements [netdriver.Driver] through the hooks.
func (d *Driver) SetLearning(name string, on bool) error {
	c, err := d.before("SetLearning", true)
	if err != nil {
		return err
	}
	err = d.Inner.SetLearning(name, on)
	d.after(c, err)
	return err
}

// AddAltName implements [netdriver.Driver] through the hooks.
func (d *Driver) AddAltName(name, alt string) error {
	c, err := d.before("AddAltName", true)
	if err != nil {
		return err
	}
	err = d.Inner.AddAltName(name, alt)
	d.after(c, err)
	return err
}

// AddrOwners implements [netdriver.Driver] through the hooks.
func (d *Driver) AddrOwners(addr netip.Addr) ([]string, error) {
	c, err := d.before("AddrOwners", false)
	if err != nil {
		return nil, err
	}
	v, err := d.Inner.AddrOwners(addr)
	d.after(c, err)
	return v, err
}

// AddrList implements [netdriver.Driver] through the hooks.
func (d *Driver) AddrList(name string, family netdriver.Family) ([]netip.Prefix, error) {
	c, err := d.before("AddrList", false)
	if err != nil {
		var zero []netip.Prefix
		return zero, err
	}
	v, err := d.Inner.AddrList(name, family)
	d.after(c, err)
	return v, err
}

// AddrReplace implements [netdriver.Driver] through the hooks.
func (d *Driver) AddrReplace(name string, addr netip.Prefix) error {
	c, err := d.before("AddrReplace", true)
	if err != nil {
		return err
	}
	err = d.Inner.AddrReplace(name, addr)
	d.after(c, err)
	return err
}

// AddrListFlags implements [netdriver.Driver] through the hooks.
func (d *Driver) AddrListFlags(name string, family netdriver.Family) ([]netdriver.FlaggedAddr, error) {
	c, err := d.before("AddrListFlags", false)
	if err != nil {
		return nil, err
	}
	v, err := d.Inner.AddrListFlags(name, family)
	d.after(c, err)
	return v, err
}

// AddrReplaceFlags implements [netdriver.Driver] through the hooks.
func (d *Driver) AddrReplaceFlags(name string, a netdriver.FlaggedAddr) error {
	c, err := d.before("AddrReplaceFlags", true)
	if err != nil {
		return err
	}
	err = d.Inner.AddrReplaceFlags(name, a)
	d.after(c, err)
	return err
}

// RouteDel implements [netdriver.Driver] through the hooks.
func (d *Driver) RouteDel(r netdriver.Route) error {
	c, err := d.before("RouteDel", true)
	if err != nil {
		return err
	}
	err = d.Inner.RouteDel(r)
	d.after(c, err)
	return err
}

// AddrDel implements [netdriver.Driver] through the hooks.
func (d *Driver) AddrDel(name string, addr netip.Prefix) error {
	c, err := d.before("AddrDel", true)
	if err != nil {
		return err
	}
	err = d.Inner.AddrDel(name, addr)
	d.after(c, err)
	return err
}

// RouteList implements [netdriver.Driver] through the hooks.
func (d *Driver) RouteList(name string, family netdriver.Family) ([]netdriver.Route, error) {
	c, err := d.before("RouteList", false)
	if err != nil {
		var zero []netdriver.Route
		return zero, err
	}
	v, err := d.Inner.RouteList(name, family)
	d.after(c, err)
	return v, err
}

// RouteReplace implements [netdriver.Driver] through the hooks.
func (d *Driver) RouteReplace(r netdriver.Route) error {
	c, err := d.before("RouteReplace", true)
	if err != nil {
		return err
	}
	err = d.Inner.RouteReplace(r)
	d.after(c, err)
	return err
}

// Sysctl implements [netdriver.Driver] through the hooks.
func (d *Driver) Sysctl(key string) (string, error) {
	c, err := d.before("Sysctl", false)
	if err != nil {
		var zero string
		return zero, err
	}
	v, err := d.Inner.Sysctl(key)
	d.after(c, err)
	return v, err
}

// SetSysctl implements [netdriver.Driver] through the hooks.
func (d *Driver) SetSysctl(key, value string) error {
	c, err := d.before("SetSysctl", true)
	if err != nil {
		return err
	}
	err = d.Inner.SetSysctl(key, value)
	d.after(c, err)
	return err
}

// TXChecksum implements [netdriver.Driver] through the hooks.
func (d *Driver) TXChecksum(name string) (bool, error) {
	c, err := d.before("TXChecksum", false)
	if err != nil {
		var zero bool
		return zero, err
	}
	v, err := d.Inner.TXChecksum(name)
	d.after(c, err)
	return v, err
}

// SetTXChecksum implements [netdriver.Driver] through the hooks.
func (d *Driver) SetTXChecksum(name string, on bool) error {
	c, err := d.before("SetTXChecksum", true)
	if err != nil {
		return err
	}
	err = d.Inner.SetTXChecksum(name, on)
	d.after(c, err)
	return err
}

// ApplyNAT implements [netdriver.Driver] through the hooks.
func (d *Driver) ApplyNAT(nat netdriver.NAT) error {
	c, err := d.before("ApplyNAT", true)
	if err != nil {
		return err
	}
	err = d.Inner.ApplyNAT(nat)
	d.after(c, err)
	return err
}

// DeleteNAT implements [netdriver.Driver] through the hooks.
func (d *Driver) DeleteNAT(family netdriver.Family) error {
	c, err := d.before("DeleteNAT", true)
	if err != nil {
		return err
	}
	err = d.Inner.DeleteNAT(family)
	d.after(c, err)
	return err
}

// NATRules implements [netdriver.Driver] through the hooks.
func (d *Driver) NATRules(family netdriver.Family) ([]string, error) {
	c, err := d.before("NATRules", false)
	if err != nil {
		var zero []string
		return zero, err
	}
	v, err := d.Inner.NATRules(family)
	d.after(c, err)
	return v, err
}
