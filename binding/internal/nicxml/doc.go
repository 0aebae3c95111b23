// Package nicxml holds the pieces of a libvirt network device that the
// binding renderers (package binding's Phase2 implementations) share: the
// user alias, the guest PCI address, the boot order or disabled option
// ROM, the NIC model and the multiqueue driver, all as KubeVirt v0.53's
// converter sets them (pkg/virt-launcher/virtwrap/converter/network.go).
//
// It never touches the kernel or files: it only builds libvirtxml values.
package nicxml
