package api_test

import (
	"encoding/base64"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
)

// problem is one FieldError a manifest must produce: its exact path and a
// text its message must contain (the bad value, quoted as the message
// quotes it, or the reason when the value is missing).
type problem struct {
	path, text string
}

// q is a value as FieldError.Error quotes it.
func q(v string) string { return fmt.Sprintf("(value %q)", v) }

// vmiYAML wraps interfaces and networks (flow YAML lists) in a minimal VMI.
func vmiYAML(interfaces, networks string) string {
	return "kind: VirtualMachineInstance\nmetadata: {name: t}\nspec:\n  domain:\n    devices:\n      interfaces: " +
		interfaces + "\n  networks: " + networks + "\n"
}

// storageYAML wraps disks and volumes (flow YAML lists) in a minimal VMI
// with the default network.
func storageYAML(disks, volumes string) string {
	return "kind: VirtualMachineInstance\nmetadata: {name: t}\nspec:\n  domain:\n    devices:\n      disks: " +
		disks + "\n  volumes: " + volumes + "\n"
}

const ifp = "spec.domain.devices.interfaces"

func TestValidateInvalid(t *testing.T) {
	long := strings.Repeat("a", api.MaxInterfaceName+1)
	tests := []struct {
		name     string
		manifest string
		want     []problem
	}{
		{"interface without network",
			vmiYAML(`[{name: a, bridge: {}}]`, `[]`),
			[]problem{{ifp + "[0].name", q("a")}}},
		{"network without interface",
			vmiYAML(`[]`, `[{name: a, pod: {}}]`),
			[]problem{{"spec.networks[0].name", q("a")}}},
		{"duplicate interface names",
			vmiYAML(`[{name: a, bridge: {}}, {name: a, masquerade: {}}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[1].name", q("a")}}},
		{"duplicate network names",
			vmiYAML(`[{name: a, bridge: {}}]`, `[{name: a, pod: {}}, {name: a, multus: {networkName: nad}}]`),
			[]problem{{"spec.networks[1].name", q("a")}}},
		{"no binding key",
			vmiYAML(`[{name: a}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0]", q("a")}}},
		{"two binding keys",
			vmiYAML(`[{name: a, bridge: {}, masquerade: {}}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0]", q("bridge,masquerade")}}},
		{"binding plugin and method at once",
			vmiYAML(`[{name: a, bridge: {}, binding: {name: my-tap}}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].binding", q("my-tap")}}},
		{"binding plugin named like a core method that 1.x has no plugin of",
			vmiYAML(`[{name: a, binding: {name: masquerade}}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].binding.name", q("masquerade")}}},
		{"1.x passt plugin off the pod network",
			vmiYAML(`[{name: a, binding: {name: passt}}]`, `[{name: a, multus: {networkName: nad}}]`),
			[]problem{{ifp + "[0].binding.name", "only possible on the pod network"}}},
		{"1.x macvtap plugin on the pod network",
			vmiYAML(`[{name: a, binding: {name: macvtap}}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].binding.name", "needs a multus network"}}},
		{"passtBinding off the pod network",
			vmiYAML(`[{name: a, passtBinding: {}}]`, `[{name: a, multus: {networkName: nad}}]`),
			[]problem{{ifp + "[0].passtBinding", "only possible on the pod network"}}},
		{"passt and passtBinding at once",
			vmiYAML(`[{name: a, passt: {}, passtBinding: {}}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0]", "more than one binding method"}}},
		{"state unknown",
			vmiYAML(`[{name: a, masquerade: {}, state: sleeping}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].state", q("sleeping")}}},
		{"state absent on masquerade",
			vmiYAML(`[{name: a, masquerade: {}, state: absent}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].state", "absent only on a bridge interface"}, {ifp + "[0].state", "not on the default network"}}},
		{"state down on SR-IOV",
			vmiYAML(`[{name: a, masquerade: {}}, {name: b, sriov: {}, state: down}]`, `[{name: a, pod: {}}, {name: b, multus: {networkName: nad}}]`),
			[]problem{{ifp + "[1].state", "SR-IOV"}}},
		{"acpiIndex negative",
			vmiYAML(`[{name: a, masquerade: {}, acpiIndex: -1}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].acpiIndex", q("-1")}}},
		{"portRanges with ports",
			vmiYAML(`[{name: a, masquerade: {}, ports: [{port: 80}], portRanges: [{protocol: TCP, start: 8000, end: 8010}]}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].portRanges", "ports and portRanges at once"}}},
		{"portRanges on bridge",
			vmiYAML(`[{name: a, bridge: {}, portRanges: [{protocol: TCP, start: 8000, end: 8010}]}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].portRanges", "only on a masquerade interface"}}},
		{"eleven portRanges",
			vmiYAML(`[{name: a, masquerade: {}, portRanges: [`+strings.Repeat(`{protocol: TCP, start: 1, end: 1},`, 11)+`]}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].portRanges", "more than 10 port ranges"}}},
		{"portRanges bad fields",
			vmiYAML(`[{name: a, masquerade: {}, portRanges: [{start: 1, end: 2}, {protocol: TCP, start: 0, end: 2}, {protocol: UDP, start: 5, end: 70000}, {protocol: UDP, start: 9, end: 8}]}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].portRanges[0].protocol", "required"}, {ifp + "[0].portRanges[1].start", q("0")},
				{ifp + "[0].portRanges[2].end", q("70000")}, {ifp + "[0].portRanges[3].start", "after end 8"}}},
		{"portRanges overlapping",
			vmiYAML(`[{name: a, masquerade: {}, portRanges: [{protocol: TCP, start: 80, end: 200}, {protocol: UDP, start: 100, end: 150}, {protocol: TCP, start: 200, end: 300}]}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].portRanges[2]", "TCP range overlaps portRanges[0] (80-200)"}}},
		{"binding plugin name not a DNS subdomain",
			vmiYAML(`[{name: a, binding: {name: "My_Tap"}}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].binding.name", q("My_Tap")}}},
		{"binding plugin without name",
			vmiYAML(`[{name: a, binding: {name: ""}}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].binding.name", q("")}}},
		{"bad MAC format",
			vmiYAML(`[{name: a, bridge: {}, macAddress: "02:00:00:00:01"}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].macAddress", q("02:00:00:00:01")}}},
		{"EUI-64 MAC",
			vmiYAML(`[{name: a, bridge: {}, macAddress: "02:00:00:00:00:00:00:01"}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].macAddress", q("02:00:00:00:00:00:00:01")}}},
		{"multicast MAC",
			vmiYAML(`[{name: a, bridge: {}, macAddress: "03:11:22:33:44:55"}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].macAddress", q("03:11:22:33:44:55")}}},
		{"all-zero MAC",
			vmiYAML(`[{name: a, bridge: {}, macAddress: "00:00:00:00:00:00"}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].macAddress", q("00:00:00:00:00:00")}}},
		{"masquerade bridge MAC",
			vmiYAML(`[{name: a, masquerade: {}, macAddress: "02:00:00:00:00:00"}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].macAddress", q("02:00:00:00:00:00")}}},
		{"duplicate port names across interfaces",
			vmiYAML(`[{name: a, masquerade: {}, ports: [{name: http, port: 80}, {name: http, port: 8080}]}]`,
				`[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].ports[1].name", q("http")}}},
		{"port name with uppercase",
			vmiYAML(`[{name: a, masquerade: {}, ports: [{name: HTTP, port: 80}]}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].ports[0].name", q("HTTP")}}},
		{"port name of 16 characters",
			vmiYAML(`[{name: a, masquerade: {}, ports: [{name: abcdefghijklmnop, port: 80}]}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].ports[0].name", q("abcdefghijklmnop")}}},
		{"port name of digits only",
			vmiYAML(`[{name: a, masquerade: {}, ports: [{name: "8080", port: 80}]}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].ports[0].name", q("8080")}}},
		{"port 0",
			vmiYAML(`[{name: a, masquerade: {}, ports: [{port: 0}]}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].ports[0].port", q("0")}}},
		{"port 70000",
			vmiYAML(`[{name: a, slirp: {}, ports: [{port: 70000}]}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].ports[0].port", q("70000")}}},
		{"protocol SCTP",
			vmiYAML(`[{name: a, masquerade: {}, ports: [{port: 80, protocol: SCTP}]}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].ports[0].protocol", q("SCTP")}}},
		{"overlapping slirp ports",
			vmiYAML(`[{name: a, slirp: {}, ports: [{port: 80}, {port: 443}, {port: 80, protocol: TCP}]}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].ports[2].port", q("80")}}},
		{"two pod networks",
			vmiYAML(`[{name: a, masquerade: {}}, {name: b, bridge: {}}]`, `[{name: a, pod: {}}, {name: b, pod: {}}]`),
			[]problem{{"spec.networks[1].pod", q("b")}}},
		{"network with neither pod nor multus",
			vmiYAML(`[{name: a, bridge: {}}]`, `[{name: a}]`),
			[]problem{{"spec.networks[0]", q("a")}}},
		{"multus without networkName",
			vmiYAML(`[{name: a, bridge: {}}]`, `[{name: a, multus: {}}]`),
			[]problem{{"spec.networks[0].multus.networkName", "required"}}},
		{"two multus defaults",
			vmiYAML(`[{name: a, bridge: {}}, {name: b, bridge: {}}]`,
				`[{name: a, multus: {networkName: n1, default: true}}, {name: b, multus: {networkName: n2, default: true}}]`),
			[]problem{{"spec.networks[1].multus.default", q("true")}}},
		{"pod network and multus default",
			vmiYAML(`[{name: a, bridge: {}}, {name: b, bridge: {}}]`,
				`[{name: a, pod: {}}, {name: b, multus: {networkName: n2, default: true}}]`),
			[]problem{{"spec.networks", "both claim eth0"}}},
		{"slirp on a multus network",
			vmiYAML(`[{name: sec, slirp: {}}]`, `[{name: sec, multus: {networkName: nad}}]`),
			[]problem{{ifp + "[0].slirp", q("sec")}}},
		{"masquerade on a multus network",
			vmiYAML(`[{name: sec, masquerade: {}}]`, `[{name: sec, multus: {networkName: nad}}]`),
			[]problem{{ifp + "[0].masquerade", q("sec")}}},
		{"passt on a multus network",
			vmiYAML(`[{name: sec, passt: {}}]`, `[{name: sec, multus: {networkName: nad}}]`),
			[]problem{{ifp + "[0].passt", q("sec")}}},
		{"macvtap on the pod network",
			vmiYAML(`[{name: p, macvtap: {}}]`, `[{name: p, pod: {}}]`),
			[]problem{{ifp + "[0].macvtap", q("p")}}},
		{"sriov on the pod network",
			vmiYAML(`[{name: p, sriov: {}}]`, `[{name: p, pod: {}}]`),
			[]problem{{ifp + "[0].sriov", q("p")}}},
		{"bad pciAddress",
			vmiYAML(`[{name: a, bridge: {}, pciAddress: "0000:81:11"}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].pciAddress", q("0000:81:11")}}},
		{"pciAddress function 8",
			vmiYAML(`[{name: a, bridge: {}, pciAddress: "0000:81:11.8"}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].pciAddress", q("0000:81:11.8")}}},
		{"bad vmNetworkCIDR",
			vmiYAML(`[{name: a, masquerade: {}}]`, `[{name: a, pod: {vmNetworkCIDR: "10.0.2.0/33"}}]`),
			[]problem{{"spec.networks[0].pod.vmNetworkCIDR", q("10.0.2.0/33")}}},
		{"vmNetworkCIDR /31 is too small",
			vmiYAML(`[{name: a, masquerade: {}}]`, `[{name: a, pod: {vmNetworkCIDR: "10.0.2.0/31"}}]`),
			[]problem{{"spec.networks[0].pod.vmNetworkCIDR", q("10.0.2.0/31")}}},
		{"IPv6 CIDR in the IPv4 field",
			vmiYAML(`[{name: a, masquerade: {}}]`, `[{name: a, pod: {vmNetworkCIDR: "fd10:0:2::/120"}}]`),
			[]problem{{"spec.networks[0].pod.vmNetworkCIDR", q("fd10:0:2::/120")}}},
		{"IPv4 CIDR in the IPv6 field",
			vmiYAML(`[{name: a, masquerade: {}}]`, `[{name: a, pod: {vmIPv6NetworkCIDR: "10.0.2.0/24"}}]`),
			[]problem{{"spec.networks[0].pod.vmIPv6NetworkCIDR", q("10.0.2.0/24")}}},
		{"private DHCP option 223",
			vmiYAML(`[{name: a, bridge: {}, dhcpOptions: {privateOptions: [{option: 223, value: x}]}}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].dhcpOptions.privateOptions[0].option", q("223")}}},
		{"private DHCP option 255",
			vmiYAML(`[{name: a, bridge: {}, dhcpOptions: {privateOptions: [{option: 255, value: x}]}}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].dhcpOptions.privateOptions[0].option", q("255")}}},
		{"duplicate private DHCP option",
			vmiYAML(`[{name: a, bridge: {}, dhcpOptions: {privateOptions: [{option: 240, value: x}, {option: 240, value: z}]}}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].dhcpOptions.privateOptions[1].option", q("240")}}},
		{"bad NTP server",
			vmiYAML(`[{name: a, bridge: {}, dhcpOptions: {ntpServers: ["127.0.0.1", "pool.ntp.org", "::1"]}}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].dhcpOptions.ntpServers[1]", q("pool.ntp.org")}, {ifp + "[0].dhcpOptions.ntpServers[2]", q("::1")}}},
		{"64 NTP servers do not fit in one DHCP option",
			vmiYAML(`[{name: a, bridge: {}, dhcpOptions: {ntpServers: [`+strings.Repeat(`"10.0.0.1", `, 63)+`"10.0.0.1"]}}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].dhcpOptions.ntpServers", q("64")}}},
		{"bootOrder 0",
			vmiYAML(`[{name: a, bridge: {}, bootOrder: 0}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].bootOrder", q("0")}}},
		{"duplicate bootOrder across disk and interface",
			"metadata: {name: t}\nspec:\n  domain:\n    devices:\n      disks: [{name: d, bootOrder: 1}]\n" +
				"      interfaces: [{name: a, bridge: {}, bootOrder: 1}]\n  networks: [{name: a, pod: {}}]\n" +
				"  volumes: [{name: d, containerDisk: {image: i}}]\n",
			[]problem{{ifp + "[0].bootOrder", "spec.domain.devices.disks[0].bootOrder"}}},
		{"dot in an interface and network name",
			vmiYAML(`[{name: e.th, bridge: {}}]`, `[{name: e.th, pod: {}}]`),
			[]problem{{ifp + "[0].name", q("e.th")}, {"spec.networks[0].name", q("e.th")}}},
		{"slash in a network name",
			vmiYAML(`[{name: "a/b", bridge: {}}]`, `[{name: "a/b", pod: {}}]`),
			[]problem{{ifp + "[0].name", q("a/b")}, {"spec.networks[0].name", q("a/b")}}},
		{"dot-dot as a volume name",
			storageYAML(`[{name: "..", disk: {}}]`, `[{name: "..", containerDisk: {image: i}}]`),
			[]problem{{"spec.volumes[0].name", q("..")}, {"spec.domain.devices.disks[0].name", q("..")}}},
		{"space in an interface name",
			vmiYAML(`[{name: "my net", bridge: {}}]`, `[{name: "my net", pod: {}}]`),
			[]problem{{ifp + "[0].name", q("my net")}, {"spec.networks[0].name", q("my net")}}},
		{"221-character network name",
			vmiYAML(`[{name: `+long+`, bridge: {}}]`, `[{name: `+long+`, pod: {}}]`),
			[]problem{{ifp + "[0].name", q(long)}, {"spec.networks[0].name", q(long)}}},
		{"colon in an interface name",
			vmiYAML(`[{name: "my:net", bridge: {}}]`, `[{name: "my:net", pod: {}}]`),
			[]problem{{ifp + "[0].name", q("my:net")}, {"spec.networks[0].name", q("my:net")}}},
		{"empty interface name",
			vmiYAML(`[{name: "", bridge: {}}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].name", "required"}, {"spec.networks[0].name", q("a")}}},
		{"uppercase VMI name",
			"metadata: {name: MyVM}\nspec: {domain: {devices: {}}}\n",
			[]problem{{"metadata.name", q("MyVM")}}},
		{"missing VMI name",
			"metadata: {}\nspec: {domain: {devices: {}}}\n",
			[]problem{{"metadata.name", "required"}}},
		{"hostname with a dot",
			"metadata: {name: t}\nspec: {hostname: a.b, domain: {devices: {}}}\n",
			[]problem{{"spec.hostname", q("a.b")}}},
		{"unknown model",
			vmiYAML(`[{name: a, bridge: {}, model: virtio-net-pci}]`, `[{name: a, pod: {}}]`),
			[]problem{{ifp + "[0].model", q("virtio-net-pci")}}},
		{"disk without volume",
			storageYAML(`[{name: d, disk: {}}, {name: e, disk: {}}]`, `[{name: d, containerDisk: {image: i}}]`),
			[]problem{{"spec.domain.devices.disks[1].name", q("e")}}},
		{"two volume sources",
			storageYAML(`[{name: d}]`, `[{name: d, containerDisk: {image: i}, emptyDisk: {capacity: 1Gi}}]`),
			[]problem{{"spec.volumes[0]", q("d")}}},
		{"bad emptyDisk capacity",
			storageYAML(`[{name: d}]`, `[{name: d, emptyDisk: {capacity: 2GB}}]`),
			[]problem{{"spec.volumes[0].emptyDisk.capacity", q("2GB")}}},
		{"containerDisk without image",
			storageYAML(`[{name: d}]`, `[{name: d, containerDisk: {}}]`),
			[]problem{{"spec.volumes[0].containerDisk.image", "required"}}},
		{"relative hostDisk path",
			storageYAML(`[{name: d}]`, `[{name: d, hostDisk: {path: disk.img, type: Disk}}]`),
			[]problem{{"spec.volumes[0].hostDisk.path", q("disk.img")}}},
		{"cloud-init with two user data",
			storageYAML(`[{name: c}]`, `[{name: c, cloudInitNoCloud: {userData: a, userDataBase64: YQ==}}]`),
			[]problem{{"spec.volumes[0].cloudInitNoCloud", q("c")}}},
		{"cdrom on virtio",
			storageYAML(`[{name: c, cdrom: {bus: virtio}}]`, `[{name: c, containerDisk: {image: i}}]`),
			[]problem{{"spec.domain.devices.disks[0].cdrom.bus", q("virtio")}}},
		{"bios and efi",
			"metadata: {name: t}\nspec: {domain: {devices: {}, firmware: {bootloader: {bios: {}, efi: {}}}}}\n",
			[]problem{{"spec.domain.firmware.bootloader", "both bios and efi"}}},
		{"bad firmware uuid",
			"metadata: {name: t}\nspec: {domain: {devices: {}, firmware: {uuid: not-a-uuid}}}\n",
			[]problem{{"spec.domain.firmware.uuid", q("not-a-uuid")}}},
		{"bad memory request",
			"metadata: {name: t}\nspec: {domain: {devices: {}, resources: {requests: {memory: 100m}}}}\n",
			[]problem{{"spec.domain.resources.requests.memory", q("100m")}}},
		{"vCPU product overflows uint32",
			"metadata: {name: t}\nspec: {domain: {devices: {}, cpu: {cores: 65536, sockets: 65536, threads: 2}}}\n",
			[]problem{{"spec.domain.cpu", q("4294967295")}}},
		// Issue 11.11: VM networks that would break the pod.
		{"vmNetworkCIDR 0.0.0.0/0", masqCIDR("0.0.0.0/0", ""), []problem{{"spec.networks[0].pod.vmNetworkCIDR", `overlaps "this network" 0.0.0.0/8 (value "0.0.0.0/0")`}}},
		{"vmNetworkCIDR multicast", masqCIDR("224.1.0.0/24", ""), []problem{{"spec.networks[0].pod.vmNetworkCIDR", `overlaps multicast 224.0.0.0/4 (value "224.1.0.0/24")`}}},
		{"vmNetworkCIDR class E", masqCIDR("240.0.0.0/24", ""), []problem{{"spec.networks[0].pod.vmNetworkCIDR", `overlaps reserved class E (and broadcast) 240.0.0.0/4`}}},
		{"vmNetworkCIDR broadcast", masqCIDR("255.255.255.252/30", ""), []problem{{"spec.networks[0].pod.vmNetworkCIDR", `240.0.0.0/4 (value "255.255.255.252/30")`}}},
		{"vmNetworkCIDR link-local", masqCIDR("169.254.0.0/24", ""), []problem{{"spec.networks[0].pod.vmNetworkCIDR", `overlaps link-local`}}},
		{"vmNetworkCIDR of the bridges' link-local addresses", masqCIDR("169.254.75.0/24", ""), []problem{{"spec.networks[0].pod.vmNetworkCIDR", `169.254.0.0/16 (value "169.254.75.0/24")`}}},
		{"vmNetworkCIDR loopback", masqCIDR("127.0.0.0/24", ""), []problem{{"spec.networks[0].pod.vmNetworkCIDR", `overlaps loopback 127.0.0.0/8`}}},
		{"vmNetworkCIDR covering 128.0.0.0/1", masqCIDR("128.0.0.0/1", ""), []problem{{"spec.networks[0].pod.vmNetworkCIDR", `overlaps link-local`}}},
		{"vmIPv6NetworkCIDR ::/0", masqCIDR("", "::/0"), []problem{{"spec.networks[0].pod.vmIPv6NetworkCIDR", `overlaps the unspecified address ::/128 (value "::/0")`}}},
		{"vmIPv6NetworkCIDR multicast", masqCIDR("", "ff00::/8"), []problem{{"spec.networks[0].pod.vmIPv6NetworkCIDR", `overlaps multicast ff00::/8 (value "ff00::/8")`}}},
		{"vmIPv6NetworkCIDR link-local", masqCIDR("", "fe80::/64"), []problem{{"spec.networks[0].pod.vmIPv6NetworkCIDR", `overlaps link-local fe80::/10 (value "fe80::/64")`}}},
		{"vmIPv6NetworkCIDR loopback", masqCIDR("", "::/120"), []problem{{"spec.networks[0].pod.vmIPv6NetworkCIDR", `overlaps the unspecified address`}}},
		{"vmIPv6NetworkCIDR IPv4-mapped", masqCIDR("", "::ffff:0:0/104"), []problem{{"spec.networks[0].pod.vmIPv6NetworkCIDR", `not an IPv6 CIDR (value "::ffff:0:0/104")`}}},
		{"vmIPv6NetworkCIDR covering the IPv4-mapped range", masqCIDR("", "::fffe:0:0/95"), []problem{{"spec.networks[0].pod.vmIPv6NetworkCIDR", `overlaps IPv4-mapped ::ffff:0.0.0.0/96 (value "::fffe:0:0/95")`}}},
		// Issue 12.9: parity with KubeVirt v0.53's webhook.
		{"masquerade on a multus default network",
			vmiYAML(`[{name: d, masquerade: {}}]`, `[{name: d, multus: {networkName: nad, default: true}}]`),
			[]problem{{ifp + "[0].masquerade", q("d")}}},
		{"slirp on a multus default network",
			vmiYAML(`[{name: d, slirp: {}}]`, `[{name: d, multus: {networkName: nad, default: true}}]`),
			[]problem{{ifp + "[0].slirp", q("d")}}},
		{"passt on a multus default network",
			vmiYAML(`[{name: d, passt: {}}]`, `[{name: d, multus: {networkName: nad, default: true}}]`),
			[]problem{{ifp + "[0].passt", q("d")}}},
		{"multiqueue without a virtio NIC",
			"metadata: {name: t}\nspec:\n  domain: {devices: {networkInterfaceMultiqueue: true, interfaces: [{name: a, bridge: {}, model: e1000}, {name: b, bridge: {}, model: rtl8139}]}}\n" +
				"  networks: [{name: a, pod: {}}, {name: b, multus: {networkName: nn}}]\n",
			[]problem{{"spec.domain.devices.networkInterfaceMultiqueue", "no interface uses the virtio model"}}},
		// Issue 11.13.
		{"two interfaces with the same MAC",
			vmiYAML(`[{name: a, bridge: {}, macAddress: "02:00:00:00:00:0a"}, {name: b, bridge: {}, macAddress: "02:00:00:00:00:0b"}, {name: c, macvtap: {}, macAddress: "02:00:00:00:00:0A"}]`,
				`[{name: a, pod: {}}, {name: b, multus: {networkName: nn}}, {name: c, multus: {networkName: m}}]`),
			[]problem{{ifp + "[2].macAddress", `same MAC address as spec.domain.devices.interfaces[0] (value "02:00:00:00:00:0A")`}}},
		{"two cloudInitNoCloud volumes (one image per VMI and kind)",
			storageYAML(`[{name: a}, {name: b}]`, `[{name: a, cloudInitNoCloud: {userData: u1}}, {name: b, cloudInitNoCloud: {userData: u2}}]`),
			[]problem{{"spec.volumes[1].cloudInitNoCloud", `a second cloudInitNoCloud volume (the first is spec.volumes[0] "a"): at most one volume of each cloud-init kind (value "b")`}}},
		{"two cloudInitConfigDrive volumes, a third refused too",
			storageYAML(`[{name: a}, {name: b}, {name: c}]`, `[{name: a, cloudInitConfigDrive: {userData: u1}}, {name: b, cloudInitConfigDrive: {userData: u2}}, {name: c, cloudInitConfigDrive: {userData: u3}}]`),
			[]problem{{"spec.volumes[1].cloudInitConfigDrive", `the first is spec.volumes[0] "a"`}, {"spec.volumes[2].cloudInitConfigDrive", `the first is spec.volumes[0] "a"`}}},
		{"inline userData over 2048 bytes",
			storageYAML(`[{name: c}]`, `[{name: c, cloudInitNoCloud: {userData: `+strings.Repeat("x", 2049)+`}}]`),
			[]problem{{"spec.volumes[0].cloudInitNoCloud.userData", `more than 2048 bytes; use secretRef for larger data (value "2049")`}}},
		{"inline networkData over 2048 bytes",
			storageYAML(`[{name: c}]`, `[{name: c, cloudInitConfigDrive: {userData: x, networkData: `+strings.Repeat("x", 2049)+`}}]`),
			[]problem{{"spec.volumes[0].cloudInitConfigDrive.networkData", `use networkDataSecretRef`}}},
		{"userDataBase64 decoding to 2049 bytes",
			storageYAML(`[{name: c}]`, `[{name: c, cloudInitNoCloud: {userDataBase64: `+base64.StdEncoding.EncodeToString(make([]byte, 2049))+`}}]`),
			[]problem{{"spec.volumes[0].cloudInitNoCloud.userDataBase64", `decodes to more than 2048 bytes; use secretRef for larger data (value "2049")`}}},
		{"userDataBase64 far over the limit",
			storageYAML(`[{name: c}]`, `[{name: c, cloudInitNoCloud: {userDataBase64: `+base64.StdEncoding.EncodeToString(make([]byte, 1<<20))+`}}]`),
			[]problem{{"spec.volumes[0].cloudInitNoCloud.userDataBase64", `decodes to more than 2048 bytes`}}},
		{"userDataBase64 not base64",
			storageYAML(`[{name: c}]`, `[{name: c, cloudInitNoCloud: {userDataBase64: "not base64!"}}]`),
			[]problem{{"spec.volumes[0].cloudInitNoCloud.userDataBase64", `not valid standard base64: illegal base64 data at input byte 3 (value "not base64!")`}}},
		{"networkDataBase64 URL alphabet",
			storageYAML(`[{name: c}]`, `[{name: c, cloudInitNoCloud: {userData: x, networkDataBase64: "-_-_"}}]`),
			[]problem{{"spec.volumes[0].cloudInitNoCloud.networkDataBase64", q("-_-_")}}},
		{"secretRef without a name",
			storageYAML(`[{name: c}]`, `[{name: c, cloudInitNoCloud: {secretRef: {}}}]`),
			[]problem{{"spec.volumes[0].cloudInitNoCloud.secretRef.name", "required"}}},
		{"five problems at once",
			vmiYAML(`[{name: a, bridge: {}, macAddress: "zz", model: rtl, ports: [{port: 0}]}, {name: b, masquerade: {}, ports: [{port: 0}]}]`,
				`[{name: a, pod: {}}, {name: b, multus: {networkName: nad}}, {name: c, pod: {}}]`),
			[]problem{
				{ifp + "[0].macAddress", q("zz")},
				{ifp + "[0].model", q("rtl")},
				{ifp + "[1].masquerade", q("b")},
				{ifp + "[0].ports[0].port", q("0")},
				{"spec.networks[2].pod", q("c")},
				{"spec.networks[2].name", q("c")},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vmi, err := api.Decode([]byte(tt.manifest))
			require.NoError(t, err, "the manifest itself must decode")
			api.SetDefaults(vmi)
			err = api.Validate(vmi)
			require.Error(t, err)
			require.ErrorIs(t, err, api.ErrInvalid)

			fes := api.FieldErrors(err)
			var got, want []string
			for _, fe := range fes {
				got = append(got, fe.Path)
			}
			for _, p := range tt.want {
				want = append(want, p.path)
			}
			sort.Strings(got)
			sort.Strings(want)
			require.Equal(t, want, got, "field paths; errors: %v", err)
			for _, p := range tt.want {
				found := false
				for _, fe := range fes {
					if fe.Path == p.path && strings.Contains(fe.Error(), p.text) {
						found = true
					}
				}
				require.True(t, found, "no error at %s containing %q in:\n%v", p.path, p.text, err)
				require.Contains(t, err.Error(), p.path)
			}

			_, err = api.Load([]byte(tt.manifest))
			require.ErrorIs(t, err, api.ErrInvalid, "Load validates too")
		})
	}
	require.GreaterOrEqual(t, len(tests), 30)
}

// masqCIDR is a masquerade VMI with the given pod network CIDRs.
func masqCIDR(v4, v6 string) string {
	return vmiYAML(`[{name: a, masquerade: {}}]`, fmt.Sprintf(`[{name: a, pod: {vmNetworkCIDR: %q, vmIPv6NetworkCIDR: %q}}]`, v4, v6))
}

// TestValidateFiveProblems checks that the problems of one manifest come
// back together, as one joined error.
func TestValidateFiveProblems(t *testing.T) {
	_, err := api.Load([]byte(`
metadata: {name: Bad_Name}
spec:
  domain:
    devices:
      interfaces: [{name: a, bridge: {}, macAddress: "01:00:5e:00:00:01", pciAddress: "x"}]
    firmware: {bootloader: {bios: {}, efi: {}}}
  networks: [{name: a, pod: {vmNetworkCIDR: "10.0.0.0/31"}}]
`))
	require.ErrorIs(t, err, api.ErrInvalid)
	require.ElementsMatch(t, []string{
		"metadata.name",
		ifp + "[0].macAddress",
		ifp + "[0].pciAddress",
		"spec.domain.firmware.bootloader",
		"spec.networks[0].pod.vmNetworkCIDR",
	}, fieldPaths(err))
}

func TestValidateValid(t *testing.T) {
	tests := []struct{ name, manifest string }{
		{"every binding on its network", vmiYAML(
			`[{name: p, masquerade: {}, macAddress: "02:11:22:33:44:55", ports: [{name: http, port: 80}, {port: 80, protocol: UDP}], bootOrder: 1, pciAddress: "0000:02:01.0", dhcpOptions: {ntpServers: ["10.0.0.1"], privateOptions: [{option: 224, value: x}, {option: 254, value: z}]}},`+
				`{name: m1, bridge: {}}, {name: m2, sriov: {}}, {name: m3, macvtap: {}}]`,
			`[{name: p, pod: {vmNetworkCIDR: "10.11.0.0/30", vmIPv6NetworkCIDR: "fd00::/64"}}, {name: m1, multus: {networkName: a}}, {name: m2, multus: {networkName: ns/b}}, {name: m3, multus: {networkName: c}}]`)},
		{"one volume of each cloud-init kind, and two sysprep volumes", storageYAML(`[{name: a}, {name: b}, {name: c}, {name: d}]`,
			`[{name: a, cloudInitNoCloud: {userData: x}}, {name: b, cloudInitConfigDrive: {userData: u2}}, {name: c, sysprep: {secret: {name: s}}}, {name: d, sysprep: {configMap: {name: m}}}]`)},
		{"bridge on a multus default", vmiYAML(`[{name: d, bridge: {}}, {name: s, bridge: {}}]`,
			`[{name: s, multus: {networkName: x}}, {name: d, multus: {networkName: other, default: true}}]`)},
		// Issue 12.9: what KubeVirt v0.53's webhook accepts.
		{"ports on bridge, sriov and macvtap", vmiYAML(
			`[{name: p, bridge: {}, ports: [{name: http, port: 80}]}, {name: s, sriov: {}, ports: [{port: 0}]}, {name: m, macvtap: {}, ports: [{port: 70000, protocol: SCTP}]}]`,
			`[{name: p, pod: {}}, {name: s, multus: {networkName: a}}, {name: m, multus: {networkName: b}}]`)},
		{"dhcpOptions on slirp, sriov and macvtap", vmiYAML(
			`[{name: p, slirp: {}, dhcpOptions: {bootFileName: pxe}}, {name: s, sriov: {}, dhcpOptions: {ntpServers: ["10.0.0.1"]}}, {name: m, macvtap: {}, dhcpOptions: {}}]`,
			`[{name: p, pod: {}}, {name: s, multus: {networkName: a}}, {name: m, multus: {networkName: b}}]`)},
		{"vmNetworkCIDR with host bits", masqCIDR("10.0.2.1/24", "fd10:0:2::1/120")},
		{"masquerade port declared twice", vmiYAML(`[{name: a, masquerade: {}, ports: [{port: 80}, {port: 80, protocol: TCP}]}]`, `[{name: a, pod: {}}]`)},
		{"multiqueue with a virtio NIC", "metadata: {name: t}\nspec:\n  domain: {devices: {networkInterfaceMultiqueue: true, interfaces: [{name: a, bridge: {}, model: e1000}, {name: b, bridge: {}}]}}\n" +
			"  networks: [{name: a, pod: {}}, {name: b, multus: {networkName: nn}}]\n"},
		{"multiqueue with no interface", "metadata: {name: t}\nspec: {domain: {devices: {networkInterfaceMultiqueue: true, autoattachPodInterface: false}}}\n"},
		{"220-character names", vmiYAML(`[{name: `+strings.Repeat("c", 220)+`, masquerade: {}}]`, `[{name: `+strings.Repeat("c", 220)+`, pod: {}}]`)},
		{"inline cloud-init data of 2048 bytes", storageYAML(`[{name: c}]`, `[{name: c, cloudInitNoCloud: {userDataBase64: `+
			base64.StdEncoding.EncodeToString(make([]byte, 2048))+`, networkData: `+strings.Repeat("n", 2048)+`}}]`)},
		{"special-looking but ordinary VM networks", masqCIDR("100.64.0.0/24", "fd00:169:254::/120")},
		{"no network at all", "metadata: {name: t}\nspec: {domain: {devices: {autoattachPodInterface: false}}}\n"},
		{"binding plugins on the pod and a multus network", vmiYAML(`[{name: p, binding: {name: my-tap}}, {name: m, binding: {name: example.com.tap}}]`,
			`[{name: p, pod: {}}, {name: m, multus: {networkName: a}}]`)},
		// KubeVirt v1.9.0's forms (issue 22).
		{"1.x binding forms", vmiYAML(`[{name: p, passtBinding: {}, acpiIndex: 3, state: down}, {name: m, binding: {name: macvtap}, model: igb}, {name: b, bridge: {}, state: absent}]`,
			`[{name: p, pod: {}}, {name: m, multus: {networkName: a}}, {name: b, multus: {networkName: c}}]`)},
		{"1.x passt and slirp plugins", vmiYAML(`[{name: p, binding: {name: passt}}]`, `[{name: p, pod: {}}]`)},
		{"1.x slirp plugin", vmiYAML(`[{name: p, binding: {name: slirp}, state: up}]`, `[{name: p, pod: {}}]`)},
		{"ten portRanges, TCP and UDP sharing ports", vmiYAML(`[{name: a, masquerade: {}, portRanges: [{protocol: TCP, start: 8000, end: 8010}, {protocol: UDP, start: 8000, end: 8010}, `+
			`{protocol: TCP, start: 8011, end: 8011}, {protocol: TCP, start: 1, end: 2}, {protocol: TCP, start: 3, end: 4}, {protocol: TCP, start: 5, end: 6}, `+
			`{protocol: TCP, start: 7, end: 8}, {protocol: TCP, start: 9, end: 10}, {protocol: TCP, start: 11, end: 12}, {protocol: TCP, start: 65535, end: 65535}]}]`, `[{name: a, pod: {}}]`)},
		{"63-character names", vmiYAML(`[{name: `+strings.Repeat("b", 63)+`, passt: {}}]`, `[{name: `+strings.Repeat("b", 63)+`, pod: {}}]`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := api.Load([]byte(tt.manifest))
			require.NoError(t, err)
		})
	}
}

// TestInterfaceBinding: the registry key of an interface is its core
// method or its plugin's name, "" when it has neither or both.
func TestInterfaceBinding(t *testing.T) {
	for _, tc := range []struct {
		name  string
		iface api.Interface
		want  string
	}{
		{"core", api.Interface{Bridge: &struct{}{}}, api.BindingBridge},
		{"plugin", api.Interface{Plugin: &api.PluginBinding{Name: "my-tap"}}, "my-tap"},
		{"neither", api.Interface{}, ""},
		{"both", api.Interface{Slirp: &struct{}{}, Plugin: &api.PluginBinding{Name: "my-tap"}}, ""},
		{"two core", api.Interface{Slirp: &struct{}{}, Passt: &struct{}{}}, ""},
		{"1.x passtBinding", api.Interface{PasstBinding: &struct{}{}}, api.BindingPasst},
		{"1.x passt plugin", api.Interface{Plugin: &api.PluginBinding{Name: "passt"}}, api.BindingPasst},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.iface.Binding())
		})
	}
}
