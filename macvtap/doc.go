// Package macvtap holds the facts shared by the macvtap device plugin
// ([github.com/virtnet/virtnet/macvtap/deviceplugin]), the macvtap CNI
// configuration ([github.com/virtnet/virtnet/macvtap/cniconfig]) and the CNI
// plugin itself ([github.com/virtnet/virtnet/macvtap/plugin]): the macvtap
// operating modes, the extended-resource namespace and the rule that turns a
// device-plugin device ID into the name of the macvtap link on the host.
//
// The behaviour follows kubevirt/macvtap-cni (v0.11 and later); deliberate
// differences are written down beside the code that makes them.
//
// The package is pure: it never touches the kernel and builds on any OS.
package macvtap
