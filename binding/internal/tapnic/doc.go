// Package tapnic renders the <interface> of the bindings whose VM NIC sits
// on an in-pod bridge and tap made by phase1 (bridge and masquerade), in
// either form of binding.InterfaceType. It only builds libvirtxml values.
package tapnic
