// Package sriov implements the sriov binding method: the VM gets an
// SR-IOV virtual function (VF) of a host NIC by PCI passthrough (VFIO).
// The SR-IOV device plugin allocated the VF to the pod and the SR-IOV CNI
// bound it to vfio-pci; nothing of it is visible as a link in the pod.
//
// # Phase1
//
// Nothing: Discover returns nil, Plan returns a record holding only the
// interface, pod interface and binding, Prepare and Cleanup do nothing,
// and NeedsRecord is false (KubeVirt v0.53 also returns at once for
// SR-IOV in both phases).
//
// # Phase2
//
// Render appends
//
//	<hostdev mode='subsystem' type='pci' managed='no'>
//	  <source><address domain='0x0000' bus='0x81' slot='0x10' function='0x2'/></source>
//	  [<boot order='N'/>] <alias name='ua-sriov-<name>'/> [<address type='pci' …/> (the guest address)]
//	</hostdev>
//
// managed='no' because the CNI already bound the VF to vfio-pci and an
// unprivileged libvirt could not rebind it. There is no <mac>: the VF's
// MAC is set by the SR-IOV CNI on the PF (from the network-selection
// annotation, where KubeVirt's virt-controller puts the spec MAC).
//
// # Finding the VF's host PCI address
//
// Three sources, all reachable without privileges:
//
//  0. KubeVirt 1.x's downward-API file /etc/podinfo/network-info
//     ([binding.RenderOptions.NetworkInfo]; prestart.Hook reads it, its
//     NetworkInfo field names another path): the pod annotation
//     kubevirt.io/network-info that v1.x's virt-controller writes from
//     Multus' network-status, {"interfaces": [{"network": "<VMI network
//     name>", "deviceInfo": {"pci": {"pci-address": "0000:65:00.3"}}}]}
//     (KubeVirt v1.9's pkg/network/downwardapi), keyed by network name.
//  1. The Multus network-status annotation (k8s.v1.cni.cncf.io/network-status,
//     [NetworkStatusAnnotation]) in the VMI's metadata.annotations: a JSON
//     list with, per attachment, the pod interface ("interface": "net1")
//     and "device-info": {"pci": {"pci-address": "0000:81:10.2"}}. The
//     launcher copies its pod's annotation there (KubeVirt ≥ 0.59 passes
//     the same data through a downward-API file).
//  2. The device plugin's environment ([binding.RenderOptions.Env]), as
//     KubeVirt v0.53 does: KUBEVIRT_RESOURCE_NAME_<interface name> (set by
//     virt-controller from the NetworkAttachmentDefinition's resourceName
//     annotation) names the resource, and PCIDEVICE_<RESOURCE> (upper-cased,
//     '/' and '.' replaced by '_', e.g. PCIDEVICE_INTEL_COM_SRIOV_NETDEVICE)
//     lists the addresses allocated to the pod, comma-separated (a trailing
//     comma is ignored).
//
// Precedence: an interface whose network has a network-info entry with a
// PCI address takes it; else one whose pod interface has a network-status
// entry with a PCI address takes that address (it is exact: Multus records the
// VF it handed to that attachment). The remaining SR-IOV interfaces, in
// spec.domain.devices.interfaces order, each take the first address of
// their resource's list that no interface has taken yet (neither through
// network-status nor earlier in that order), so two interfaces never get
// the same VF even when resources share addresses. This is KubeVirt
// v0.53's allocation, made deterministic per call: Render, which sees one
// pair, recomputes the allocation of the whole VMI and picks its pair's,
// so the i-th SR-IOV interface on a resource takes the i-th free address
// whatever order Render is called in. KubeVirt ≥ 0.59 prefers
// network-status too but falls back to the environment only when
// network-status maps no network at all; falling back per interface is a
// deliberate, compatible refinement.
//
// Errors name the variable (or the annotation) and its value and match
// [ErrNotSet], [ErrExhausted], [ErrBadAddress], [ErrAddressTwice] or
// [ErrBadNetworkStatus]; the caller names the interface.
//
// [SimulatedEnv] fabricates a plausible device-plugin environment for
// running the example without SR-IOV hardware.
package sriov
