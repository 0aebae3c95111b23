// Package slirp implements the slirp binding method: QEMU's built-in
// user-mode network stack (libslirp) gives the VM a private network
// (10.0.2.0/24, the VM at 10.0.2.15, DHCP and DNS from QEMU) and
// NATs its traffic through ordinary sockets of the QEMU process in the pod
// network namespace; the interface's ports are forwarded from the pod to
// the VM.
//
// # Phase1
//
// Nothing: Discover returns nil, Plan returns a record holding only the
// interface, pod interface and binding, Prepare and Cleanup do nothing and
// NeedsRecord is false. QEMU opens sockets as the launcher's user; no
// link, address or privilege is needed.
//
// # Phase2: how the device is expressed
//
// libvirt has <interface type='user'> for slirp, but it cannot express
// port forwards for it: <portForward> is for the passt backend only.
// Recent libvirt refuses it at define time on any other interface ("The
// <portForward> element can only be used with … its 'passt' backend",
// libvirt's domain_validate.c); libvirt 9.0.0 (measured with Debian 12's
// test driver) still defines it but only its passt code reads it, so the
// forwards would be silently lost. So, as KubeVirt v0.53 does,
// Render adds no <interface> but QEMU arguments under
// <qemu:commandline> (libvirt's QEMU namespace):
//
//	-netdev user,id=hostua-<name>,net=<vmNetworkCIDR|10.0.2.0/24>,dnssearch=<domain>…[,hostfwd=tcp::80-:80 …]
//	-device <model>,netdev=hostua-<name>,id=ua-<name>[,mac=<macAddress>][,bootindex=<bootOrder>]
//
// one dnssearch= per search domain of the pod's resolv.conf
// (binding.RenderOptions.ResolvConf; every search line's domains in
// order, lower-cased, cluster.local when there is none, as KubeVirt v0.53
// renders them; a domain that is not a DNS name, which could smuggle QEMU
// options in through a ',', is an [ErrSearchDomain]), and
// one hostfwd=<proto>::<port>-:<port> per declared port (protocol
// lower-cased; duplicates cannot occur, validation refuses them). The
// device is thus invisible to libvirt: no PCI address management, no
// alias in libvirt's device list (QEMU's id carries it).
//
// # KubeVirt v0.53 facts kept
//
//   - The model is e1000 unless the interface asks for e1000 or rtl8139,
//     as KubeVirt forces it ("slirp works only with e1000 or rtl8139"). QEMU
//     itself would accept virtio-net with user networking, but since the
//     default model is virtio every slirp VM under KubeVirt saw an e1000;
//     keeping that keeps the guest's NIC (and its driver and interface
//     name) the same as under KubeVirt.
//   - net= is the pod network's vmNetworkCIDR, 10.0.2.0/24 when unset.
//   - The MAC is passed only when the interface sets one (QEMU otherwise
//     picks 52:54:00:12:34:56 + n).
//
// # Deliberate differences
//
//   - QEMU ids: KubeVirt uses the interface name for both the netdev and
//     the device id; here they are "hostua-<name>" and "ua-<name>", the ids
//     libvirt itself gives a device with alias ua-<name>, because a QEMU id
//     must begin with a letter and an interface name (a DNS label) may not.
//   - bootOrder becomes bootindex=N on the device (KubeVirt drops it).
//   - pciAddress cannot be honoured (the bus name depends on the machine
//     type and the controllers libvirt adds); it is ignored, as in KubeVirt.
package slirp
