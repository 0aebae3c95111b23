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
	return read(d, "LinkByName", func() (*netdriver.Link, error) { return d.Inner.LinkByName(name) })
}

// LinkList implements [netdriver.Driver] through the hooks.
func (d *Driver) LinkList() ([]*netdriver.Link, error) {
	return read(d, "LinkList", func() ([]*netdriver.Link, error) { return d.Inner.LinkList() })
}

// AddBridge implements [netdriver.Driver] through the hooks.
func (d *Driver) AddBridge(name string, mtu int, mac net.HardwareAddr) error {
	return d.mutate("AddBridge", func() error { return d.Inner.AddBridge(name, mtu, mac) })
}

// AddDummy implements [netdriver.Driver] through the hooks.
func (d *Driver) AddDummy(name string) error {
	return d.mutate("AddDummy", func() error { return d.Inner.AddDummy(name) })
}

// AddTap implements [netdriver.Driver] through the hooks.
func (d *Driver) AddTap(tap netdriver.Tap) error {
	return d.mutate("AddTap", func() error { return d.Inner.AddTap(tap) })
}

// DeleteLink implements [netdriver.Driver] through the hooks.
func (d *Driver) DeleteLink(name string) error {
	return d.mutate("DeleteLink", func() error { return d.Inner.DeleteLink(name) })
}

// SetName implements [netdriver.Driver] through the hooks.
func (d *Driver) SetName(old, new string) error {
	return d.mutate("SetName", func() error { return d.Inner.SetName(old, new) })
}

// SetUp implements [netdriver.Driver] through the hooks.
func (d *Driver) SetUp(name string) error {
	return d.mutate("SetUp", func() error { return d.Inner.SetUp(name) })
}

// SetDown implements [netdriver.Driver] through the hooks.
func (d *Driver) SetDown(name string) error {
	return d.mutate("SetDown", func() error { return d.Inner.SetDown(name) })
}

// SetMAC implements [netdriver.Driver] through the hooks.
func (d *Driver) SetMAC(name string, mac net.HardwareAddr) error {
	return d.mutate("SetMAC", func() error { return d.Inner.SetMAC(name, mac) })
}

// SetMTU implements [netdriver.Driver] through the hooks.
func (d *Driver) SetMTU(name string, mtu int) error {
	return d.mutate("SetMTU", func() error { return d.Inner.SetMTU(name, mtu) })
}

// SetMaster implements [netdriver.Driver] through the hooks.
func (d *Driver) SetMaster(name, bridge string) error {
	return d.mutate("SetMaster", func() error { return d.Inner.SetMaster(name, bridge) })
}

// Learning implements [netdriver.Driver] through the hooks.
func (d *Driver) Learning(name string) (bool, error) {
	return read(d, "Learning", func() (bool, error) { return d.Inner.Learning(name) })
}

// SetLearning implements [netdriver.Driver] through the hooks.
func (d *Driver) SetLearning(name string, on bool) error {
	return d.mutate("SetLearning", func() error { return d.Inner.SetLearning(name, on) })
}

// AddAltName implements [netdriver.Driver] through the hooks.
func (d *Driver) AddAltName(name, alt string) error {
	return d.mutate("AddAltName", func() error { return d.Inner.AddAltName(name, alt) })
}

// AddrOwners implements [netdriver.Driver] through the hooks.
func (d *Driver) AddrOwners(addr netip.Addr) ([]string, error) {
	return read(d, "AddrOwners", func() ([]string, error) { return d.Inner.AddrOwners(addr) })
}

// AddrList implements [netdriver.Driver] through the hooks.
func (d *Driver) AddrList(name string, family netdriver.Family) ([]netip.Prefix, error) {
	return read(d, "AddrList", func() ([]netip.Prefix, error) { return d.Inner.AddrList(name, family) })
}

// AddrReplace implements [netdriver.Driver] through the hooks.
func (d *Driver) AddrReplace(name string, addr netip.Prefix) error {
	return d.mutate("AddrReplace", func() error { return d.Inner.AddrReplace(name, addr) })
}

// AddrListFlags implements [netdriver.Driver] through the hooks.
func (d *Driver) AddrListFlags(name string, family netdriver.Family) ([]netdriver.FlaggedAddr, error) {
	return read(d, "AddrListFlags", func() ([]netdriver.FlaggedAddr, error) { return d.Inner.AddrListFlags(name, family) })
}

// AddrReplaceFlags implements [netdriver.Driver] through the hooks.
func (d *Driver) AddrReplaceFlags(name string, a netdriver.FlaggedAddr) error {
	return d.mutate("AddrReplaceFlags", func() error { return d.Inner.AddrReplaceFlags(name, a) })
}

// RouteDel implements [netdriver.Driver] through the hooks.
func (d *Driver) RouteDel(r netdriver.Route) error {
	return d.mutate("RouteDel", func() error { return d.Inner.RouteDel(r) })
}

// AddrDel implements [netdriver.Driver] through the hooks.
func (d *Driver) AddrDel(name string, addr netip.Prefix) error {
	return d.mutate("AddrDel", func() error { return d.Inner.AddrDel(name, addr) })
}

// RouteList implements [netdriver.Driver] through the hooks.
func (d *Driver) RouteList(name string, family netdriver.Family) ([]netdriver.Route, error) {
	return read(d, "RouteList", func() ([]netdriver.Route, error) { return d.Inner.RouteList(name, family) })
}

// RouteReplace implements [netdriver.Driver] through the hooks.
func (d *Driver) RouteReplace(r netdriver.Route) error {
	return d.mutate("RouteReplace", func() error { return d.Inner.RouteReplace(r) })
}

// Sysctl implements [netdriver.Driver] through the hooks.
func (d *Driver) Sysctl(key string) (string, error) {
	return read(d, "Sysctl", func() (string, error) { return d.Inner.Sysctl(key) })
}

// SetSysctl implements [netdriver.Driver] through the hooks.
func (d *Driver) SetSysctl(key, value string) error {
	return d.mutate("SetSysctl", func() error { return d.Inner.SetSysctl(key, value) })
}

// TXChecksum implements [netdriver.Driver] through the hooks.
func (d *Driver) TXChecksum(name string) (bool, error) {
	return read(d, "TXChecksum", func() (bool, error) { return d.Inner.TXChecksum(name) })
}

// SetTXChecksum implements [netdriver.Driver] through the hooks.
func (d *Driver) SetTXChecksum(name string, on bool) error {
	return d.mutate("SetTXChecksum", func() error { return d.Inner.SetTXChecksum(name, on) })
}

// ApplyNAT implements [netdriver.Driver] through the hooks.
func (d *Driver) ApplyNAT(nat netdriver.NAT) error {
	return d.mutate("ApplyNAT", func() error { return d.Inner.ApplyNAT(nat) })
}

// DeleteNAT implements [netdriver.Driver] through the hooks.
func (d *Driver) DeleteNAT(family netdriver.Family) error {
	return d.mutate("DeleteNAT", func() error { return d.Inner.DeleteNAT(family) })
}

// NATRules implements [netdriver.Driver] through the hooks.
func (d *Driver) NATRules(family netdriver.Family) ([]string, error) {
	return read(d, "NATRules", func() ([]string, error) { return d.Inner.NATRules(family) })
}
