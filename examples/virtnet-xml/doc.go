// Command virtnet-xml prints the libvirt domain XML virtnet renders for a
// VMI, or (-plan) a per-interface diagram of what phase1 set up. With no
// flags it needs neither root nor a network: it renders an embedded
// KubeVirt VMI (one bridge interface on the pod network) from an embedded
// phase1 cache.
//
//	go run ./examples/virtnet-xml                                       # embedded VMI and cache
//	go run ./examples/virtnet-xml -plan                                 # the diagram instead
//	go run ./examples/virtnet-xml -vmi deploy/vm-example.yaml           # phase1 on a simulated pod, then XML
//
// As root, with a namespace made by `ip netns add pod` and a veth eth0 in
// it holding an address and a default route (a pod as a CNI plugin leaves
// it), phase1 runs for real and its records stay in -cache, from which
// the domain renders again without running phase1:
//
//	go run ./examples/virtnet-xml -vmi examples/launcher/testdata/demo.yaml -netns pod -cache /tmp/pod-cache
//	go run ./examples/virtnet-xml -vmi examples/launcher/testdata/demo.yaml -cache /tmp/pod-cache -plan
//
// Flags:
//
//	-vmi FILE             a VirtualMachineInstance or VirtualMachine, YAML or JSON
//	-cache DIR            read (or, with -netns, write and keep) the records in DIR
//	-netns NAME|PATH      run phase1 for real in /var/run/netns/NAME first (root; needs -cache)
//	-o FILE               write the output to FILE instead of stdout
//	-interface-type T     bridge or ethernet; default: bridge with CAP_NET_ADMIN, else ethernet
//	                      (prestart.ChooseInterfaceType; bridge without CAP_NET_ADMIN is refused)
//	-plan                 print the per-interface diagram instead of XML
//
// With -vmi and neither -cache nor -netns, phase1 runs against
// netdriver's fake, seeded with one link per network as a CNI leaves it
// (addresses, default route, MAC, MTU 1440), in a temporary cache. A VMI
// that does not validate prints every problem with its field path and
// exits with status 2.
//
// The XML is phase2.Domain's, the dry run: no DHCP server and no image. A
// launcher that boots the domain uses prestart.Hook (see examples/launcher),
// which renders the same interfaces and serves their DHCP.
package main
