package api

// Disk is one entry of spec.domain.devices.disks. At most one of Disk,
// CDRom and LUN is set; none means a virtio disk.
type Disk struct {
	Name      string       `json:"name"`
	Disk      *DiskTarget  `json:"disk,omitempty"`
	CDRom     *CDRomTarget `json:"cdrom,omitempty"`
	LUN       *LUNTarget   `json:"lun,omitempty"`
	BootOrder *uint        `json:"bootOrder,omitempty"`
	Serial    string       `json:"serial,omitempty"`
	Cache     string       `json:"cache,omitempty"`
	IO        string       `json:"io,omitempty"`
	Shareable *bool        `json:"shareable,omitempty"`
}

// DiskTarget is a disk device.
type DiskTarget struct {
	Bus        string `json:"bus,omitempty"`
	ReadOnly   bool   `json:"readonly,omitempty"`
	PciAddress string `json:"pciAddress,omitempty"`
}

// CDRomTarget is a cdrom device; KubeVirt makes it read-only unless
// ReadOnly is false.
type CDRomTarget struct {
	Bus      string `json:"bus,omitempty"`
	ReadOnly *bool  `json:"readonly,omitempty"`
	Tray     string `json:"tray,omitempty"`
}

// LUNTarget is a lun device.
type LUNTarget struct {
	Bus      string `json:"bus,omitempty"`
	ReadOnly bool   `json:"readonly,omitempty"`
}

// Volume is one entry of spec.volumes. Exactly one source is set.
type Volume struct {
	Name                  string               `json:"name"`
	ContainerDisk         *ContainerDiskSource `json:"containerDisk,omitempty"`
	PersistentVolumeClaim *PVCSource           `json:"persistentVolumeClaim,omitempty"`
	DataVolume            *DataVolumeSource    `json:"dataVolume,omitempty"`
	EmptyDisk             *EmptyDiskSource     `json:"emptyDisk,omitempty"`
	HostDisk              *HostDiskSource      `json:"hostDisk,omitempty"`
	CloudInitNoCloud      *CloudInitSource     `json:"cloudInitNoCloud,omitempty"`
	CloudInitConfigDrive  *CloudInitSource     `json:"cloudInitConfigDrive,omitempty"`
	Sysprep               *SysprepSource       `json:"sysprep,omitempty"`
}

// ContainerDiskSource is a disk image shipped in a container image.
type ContainerDiskSource struct {
	Image string `json:"image"`
	Path  string `json:"path,omitempty"`
}

// PVCSource is a persistent volume claim.
type PVCSource struct {
	ClaimName string `json:"claimName"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
}

// DataVolumeSource is a CDI DataVolume; it is backed by the PVC of the same
// name.
type DataVolumeSource struct {
	Name string `json:"name"`
}

// EmptyDiskSource is a scratch disk of the given capacity.
type EmptyDiskSource struct {
	Capacity string `json:"capacity"`
}

// HostDiskSource is a disk image on the node.
type HostDiskSource struct {
	Path     string `json:"path"`
	Type     string `json:"type,omitempty"`
	Capacity string `json:"capacity,omitempty"`
}

// LocalObjectReference names a secret or config map.
type LocalObjectReference struct {
	Name string `json:"name"`
}

// CloudInitSource is cloudInitNoCloud or cloudInitConfigDrive.
type CloudInitSource struct {
	UserData             string                `json:"userData,omitempty"`
	UserDataBase64       string                `json:"userDataBase64,omitempty"`
	UserDataSecretRef    *LocalObjectReference `json:"secretRef,omitempty"`
	NetworkData          string                `json:"networkData,omitempty"`
	NetworkDataBase64    string                `json:"networkDataBase64,omitempty"`
	NetworkDataSecretRef *LocalObjectReference `json:"networkDataSecretRef,omitempty"`
}

// SysprepSource is a config map or secret holding an unattend file.
type SysprepSource struct {
	Secret    *LocalObjectReference `json:"secret,omitempty"`
	ConfigMap *LocalObjectReference `json:"configMap,omitempty"`
}
