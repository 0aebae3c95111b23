// Package cniconfig parses and validates the network configuration of the
// macvtap CNI plugin, as a NetworkAttachmentDefinition carries it:
//
//	{"cniVersion": "0.3.1", "name": "p4p1", "type": "macvtap",
//	 "mac": "02:00:00:00:00:01", "mtu": 1500, "deviceID": "p4p1Mvp0",
//	 "promiscMode": true, "ipam": {"type": "host-local", ...}}
//
// plus the MAC address a runtime may pass in CNI_ARGS ("MAC=…", which is how
// Multus forwards a pod's network-selection "mac"). [Parse] returns a
// [*NetConf] or a [*ConfigError] naming the field and the bad value.
//
// Fields beyond kubevirt/macvtap-cni's (mac, mtu, deviceID, promiscMode,
// owner, group): "mode" (it appears in NetworkAttachmentDefinitions in the
// wild; the plugin applies it to the macvtap) and "lowerDevice" (lets the
// plugin create the macvtap itself when no device plugin made one).
//
// Unknown top-level keys are refused with [ErrUnknownField] (CNI error code
// 2, "unsupported field"), the key named: a misspelt "promiscmode" or
// "lowerdevice" would otherwise give a VM a silently different device. The
// keys that others add are known: the CNI spec's (cniVersion, cniVersions,
// name, type, capabilities, ipam, dns, prevResult,
// cni.dev/valid-attachments), the conventions' runtimeConfig and args, and
// Multus's deviceID and pciBusID (the latter ignored). The "ipam" object is
// the IPAM plugin's to check, except that a key repeated in any object,
// exactly or in another case ("mode" twice, "subnet" and "Subnet" in
// "ipam"), is refused with [ErrRepeatedKey]: Go's decoder, here and in
// the IPAM plugin, would take the last one silently. [ParseNetwork] is the GC and STATUS form,
// where no deviceID exists yet.
package cniconfig
