// Package passt implements the passt binding method: libvirt (≥ 9.0)
// starts passt, a user-mode network translator, which gives the VM the
// pod's own address, routes and MTU over an emulated layer 2 and carries
// its traffic through ordinary sockets in the pod's network namespace;
// the interface's ports (or all ports when none is declared) are
// forwarded from the pod to the VM.
//
// # Phase1 (privileged, in the pod netns)
//
// passt runs in the pod netns as the launcher's unprivileged user, and
// needs two namespace-wide sysctls that an unprivileged process cannot
// set, which KubeVirt's passt binding also sets in phase1
// (PasstPodNetworkConfigurator.PreparePodNetworkInterface, KubeVirt ≥
// 0.56: net.ipv4.ping_group_range "107 107" and
// net.ipv4.ip_unprivileged_port_start "0"):
//
//   - net.ipv4.ping_group_range must include the launcher's group so that
//     passt can open ICMP echo ("ping") sockets to proxy the guest's
//     pings (IPv4 and IPv6 both follow this sysctl);
//   - net.ipv4.ip_unprivileged_port_start must not exceed the lowest
//     forwarded port, since passt binds each forwarded port in the pod
//     (0 when every port is forwarded).
//
// Prepare only widens them: it extends ping_group_range to include the
// group ([Binding.PingGroup], 107 by default) and lowers
// ip_unprivileged_port_start to the lowest forwarded port, leaving each
// alone when it already allows what passt needs (idempotent); a
// ping_group_range that does not parse is replaced by "107 107". Cleanup
// leaves them: they only grant unprivileged rights inside the pod's own
// namespace, which disappears with the pod, and the values before
// Prepare are not recorded. Discover returns nil, Plan a record holding
// only the interface, pod interface and binding; NeedsRecord is false.
//
// # Phase2
//
// Render appends
//
//	<interface type='user'>
//	  [<mac address='…'/>] <source dev='eth0'/>
//	  <portForward proto='tcp'><range start='80'/><range start='8080' end='8082'/></portForward>
//	  <portForward proto='udp'>…</portForward>
//	  <model type='virtio-non-transitional'/> <backend type='passt'/>
//	  <alias name='ua-<name>'/> [<address type='pci' …/>] <boot order='N'/> | <rom enabled='no'/>
//	</interface>
//
// Declared ports are grouped by protocol, sorted, and adjacent ports
// merged into one range. With no port declared, an empty
// <portForward proto='tcp'/> and <portForward proto='udp'/> forward every
// port, as KubeVirt does. The <mac> appears only when the interface sets
// macAddress (libvirt generates one otherwise).
//
// # KubeVirt 1.x's passtBinding: the vhost-user form
//
// An interface with passtBinding: {} (KubeVirt v1.9's core passt) is
// rendered as KubeVirt v1.9 renders it:
//
//	<interface type='vhostuser'>
//	  [<mac address='…'/>] <source dev='eth0'/> [<boot order='N'/>]
//	  <portForward …/> <model type='virtio-non-transitional'/> [<driver name='vhost' queues='N'/>]
//	  <backend type='passt' logFile='/var/run/kubevirt/passt.log'/> [<acpi index='N'/>] <alias name='ua-<name>'/>
//	</interface>
//
// with the domain's memory made shareable, which vhost-user needs:
// <memoryBacking><source type='memfd'/><access mode='shared'/>, and one
// NUMA cell of every vCPU and the memory when the domain has none
// ([SharedMemory]). With Istio's sidecar (sidecar.istio.io/inject:
// "true") Istio's reserved ports are excluded from the TCP forwards
// (<range start='15000' exclude='yes'/>, …), and, as in v1.9, no UDP
// port is forwarded unless declared. passt: {} and KubeVirt 1.x's
// binding: {name: passt} (its passt plugin) keep the type='user' form
// above. The vhost-user form needs libvirt ≥ 11.1.0 (the first with a
// passt backend on type='vhostuser'); libvirt 9.0's schema refuses it
// (TestRenderVhostUser logs that). docs/kubevirt-1x-api.md says which
// libvirt takes which form.
//
// # libvirt versions
//
// The passt backend needs libvirt ≥ 9.0 and the passt binary in the
// launcher. Measured here: Debian 12's libvirt 9.0.0 (9.0.0-4+deb12u2)
// validates this XML against its schema but refuses it at define time
// ("XML error: Invalid value for attribute 'type' in element 'backend':
// 'passt'", for 'default' too), as libvirt issue #462 reports for the
// same package; the golden tests log that and require newer libvirt to
// define the XML.
//
// # Deliberate differences from KubeVirt's passt
//
//   - type='user' form: no logFile on <backend> (the vhost-user form has
//     KubeVirt v1.9's), and no Istio port exclusions (KubeVirt v0.56's
//     form had none either).
//   - vhost-user form: a bootOrder is rendered (<boot order>), where
//     KubeVirt v1.9 drops it for passtBinding; no <rom> element, as v1.9.
//   - Adjacent ports are merged into ranges (KubeVirt lists one range per
//     port); passt receives the same set of ports.
//   - type='user' form: no multiqueue <driver> (passt serves a single
//     queue there); the vhost-user form has v1.9's virtio <driver>.
package passt
