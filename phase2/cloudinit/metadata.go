package cloudinit

import (
	"cmp"
	"fmt"
	"strings"

	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/domxml"
)

// Annotations KubeVirt v0.53 reads the instance type from; the cluster-wide
// one wins.
const (
	ClusterFlavorAnnotation = "kubevirt.io/cluster-flavor-name"
	FlavorAnnotation        = "kubevirt.io/flavor-name"
)

// NoCloudMetadata is the meta-data file of a NoCloud image. KubeVirt writes
// it as compact JSON (which cloud-init reads as YAML), and so does
// [NoCloud].
type NoCloudMetadata struct {
	InstanceType  string `json:"instance-type,omitempty"`
	InstanceID    string `json:"instance-id"`
	LocalHostname string `json:"local-hostname,omitempty"`
}

// ConfigDriveMetadata is openstack/latest/meta_data.json of a ConfigDrive
// image. Devices are the tagged interfaces ([DevicesMetadata], which the
// preStartHook fills in); PublicKeys (SSH keys from access credentials)
// are left for the caller: virtnet's VMI subset has no access
// credentials.
type ConfigDriveMetadata struct {
	InstanceType  string            `json:"instance_type,omitempty"`
	InstanceID    string            `json:"instance_id"`
	LocalHostname string            `json:"local_hostname,omitempty"`
	Hostname      string            `json:"hostname,omitempty"`
	UUID          string            `json:"uuid,omitempty"`
	Devices       []DeviceMetadata  `json:"devices,omitempty"`
	PublicKeys    map[string]string `json:"public_keys,omitempty"`
}

// DeviceMetadata is one entry of ConfigDriveMetadata.Devices.
type DeviceMetadata struct {
	Type    string   `json:"type"`
	Bus     string   `json:"bus"`
	Address string   `json:"address"`
	MAC     string   `json:"mac,omitempty"`
	Serial  string   `json:"serial,omitempty"`
	Tags    []string `json:"tags"`
}

// NewNoCloudMetadata is KubeVirt's default NoCloud metadata for vmi:
// instance-id "<name>.<namespace>", local-hostname [Hostname].
func NewNoCloudMetadata(vmi *api.VMI) NoCloudMetadata {
	return NoCloudMetadata{
		InstanceType:  instanceType(vmi),
		InstanceID:    instanceID(vmi),
		LocalHostname: vmi.Hostname(),
	}
}

// NewConfigDriveMetadata is KubeVirt's default ConfigDrive metadata for
// vmi: instance_id "<name>.<namespace>", hostname [Hostname], uuid the VMI's
// metadata.uid. Where the manifest has no uid (a VMI not yet seen by the API
// server), spec.domain.firmware.uuid is used instead.
func NewConfigDriveMetadata(vmi *api.VMI) ConfigDriveMetadata {
	uuid := vmi.Metadata.UID
	if uuid == "" && vmi.Spec.Domain.Firmware != nil {
		uuid = vmi.Spec.Domain.Firmware.UUID
	}
	return ConfigDriveMetadata{
		InstanceType: instanceType(vmi),
		InstanceID:   instanceID(vmi),
		Hostname:     vmi.Hostname(),
		UUID:         uuid,
	}
}

func instanceID(vmi *api.VMI) string { return vmi.Metadata.Name + "." + vmi.Metadata.Namespace }

func instanceType(vmi *api.VMI) string {
	return cmp.Or(vmi.Metadata.Annotations[ClusterFlavorAnnotation], vmi.Metadata.Annotations[FlavorAnnotation])
}

// NICMetadataType is the type of an interface's entry in the ConfigDrive
// device metadata.
const NICMetadataType = "nic"

// DevicesMetadata is the ConfigDrive device metadata of a VMI's tagged
// interfaces (spec.domain.devices.interfaces[].tag) as KubeVirt writes it:
// one "nic" entry per tagged <interface> (with its MAC) and per tagged
// SR-IOV <hostdev> (alias "ua-sriov-<name>", no MAC), in the domain's
// order, interfaces first, each with bus "pci", its guest PCI address
// "dddd:bb:ss.f" and the tag. A tagged device without a guest PCI address
// gets no entry: pin the addresses first (domxml.PinTagged), as the
// preStartHook does.
func DevicesMetadata(vmi *api.VMI, dom *libvirtxml.Domain) []DeviceMetadata {
	tags := domxml.Tags(vmi)
	if len(tags) == 0 || dom.Devices == nil {
		return nil
	}
	var out []DeviceMetadata
	add := func(alias *libvirtxml.DomainAlias, prefix string, addr *libvirtxml.DomainAddress, mac string) {
		if alias == nil || addr == nil || addr.PCI == nil {
			return
		}
		tag := tags[strings.TrimPrefix(alias.Name, prefix)]
		if tag == "" || !strings.HasPrefix(alias.Name, prefix) {
			return
		}
		p := addr.PCI
		out = append(out, DeviceMetadata{
			Type: NICMetadataType, Bus: "pci", MAC: mac, Tags: []string{tag},
			Address: fmt.Sprintf("%04x:%02x:%02x.%x", deref(p.Domain), deref(p.Bus), deref(p.Slot), deref(p.Function)),
		})
	}
	for _, nic := range dom.Devices.Interfaces {
		mac := ""
		if nic.MAC != nil {
			mac = nic.MAC.Address
		}
		add(nic.Alias, domxml.UserAliasPrefix, nic.Address, mac)
	}
	for _, hd := range dom.Devices.Hostdevs {
		add(hd.Alias, domxml.UserAliasPrefix+domxml.SRIOVAliasPrefix, hd.Address, "")
	}
	return out
}

func deref(u *uint) uint {
	if u == nil {
		return 0
	}
	return *u
}
