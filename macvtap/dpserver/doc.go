// Package dpserver is the macvtap device plugin daemon: it speaks the
// kubelet device-plugin API v1beta1 for every resource of a DP_MACVTAP_CONF
// configuration (see [github.com/virtnet/virtnet/macvtap/deviceplugin]) and
// creates the macvtap of a device when the kubelet allocates it. The
// cmd/virtnet-macvtap-dp program runs it on every node.
//
// # Per resource
//
// Each resource ("eth0" → macvtap.network.kubevirt.io/eth0) gets a gRPC
// server on its own socket in the kubelet's device-plugin directory
// ("virtnet-macvtap-<name>.sock") and registers it on the kubelet's socket
// there. ListAndWatch advertises Capacity devices with the IDs
// "<name>Mvp<i>" ([macvtap.DeviceID]), all healthy while the lower device
// exists, is up and has a carrier (IFF_UP and IFF_RUNNING), all unhealthy
// otherwise; the lower device is looked at every [Config.Poll] and a change
// is streamed at once.
//
// # Allocate
//
// For each device ID the kubelet names, Allocate creates, in the host
// namespace, the macvtap [macvtap.HostLinkName](deviceID) on the resource's
// lower device, in its mode, with the lower device's txqueuelen, and sets it
// up (a link of that name already there, from an allocation whose pod never
// took it, is reused when it is a macvtap on that lower device in that mode,
// and replaced otherwise). The answer, per container, gives the character
// device /dev/tap<ifindex> ("rw", same path in the container) and the
// environment variable MACVTAP_NETWORK_KUBEVIRT_IO_<NAME> (the name upper
// case, '-' and '.' as '_') listing the container's device IDs, comma
// separated. Multus passes the device ID to the macvtap CNI plugin as
// "deviceID"; the plugin finds the link by the same name rule and moves it
// into the pod. An unknown device ID (every ID is looked up before anything
// is made), or a lower device that is missing, fails the whole request,
// which then undoes only what it made: the slots it claimed and their
// links. A device already allocated (the kubelet allocating it again, or a
// request naming a device a pod holds) keeps its link. One request at a
// time makes or undoes devices: a request for a device waits until another
// one for it has ended, its undo included, so a request that succeeded
// always leaves its devices' links in place.
//
// # Giving devices back
//
// A macvtap moved into a pod dies with the pod's namespace. One that
// stayed on the host (the pod was deleted before its network was set up)
// would hold a MAC address on the lower device for ever: every
// [Config.Poll], when the kubelet's pod-resources socket exists, the daemon
// lists the devices assigned to live pods and deletes the host macvtap of
// every device of its resources that is not assigned and was allocated
// more than [Config.GiveBackAfter] ago (the kubelet records an assignment
// only after Allocate returns). A device a live pod holds is kept, and no
// longer looked at once its macvtap has left the host. Host macvtaps of its
// slots found at start count as allocated then. The kubelet is asked only
// while some allocation is older than GiveBackAfter.
//
// # Kubelet restarts
//
// A restarting kubelet recreates its socket and removes every other socket
// in the directory. The daemon notices either (the kubelet socket's inode
// changed, or one of its own sockets is gone) at the next poll, serves every
// resource again on new sockets and registers again. A failed registration
// is retried at each poll.
package dpserver
