package cloudinit

import (
	"context"
	"encoding/json"
	"fmt"
)

// NoCloud writes a NoCloud image to isoPath: label "cidata", files
// "user-data" (always present, empty when there is only network data, as
// cloud-init needs it), "meta-data" (meta as JSON) and "network-config"
// (when data has network data).
func NoCloud(ctx context.Context, isoPath string, data Data, meta NoCloudMetadata) error {
	m, err := json.Marshal(meta)
	if err != nil {
		return fmt.Errorf("cloudinit: image %s: meta-data: %w", isoPath, err)
	}
	files := []isoFile{{"user-data", data.UserData}, {"meta-data", m}}
	if len(data.NetworkData) > 0 {
		files = append(files, isoFile{"network-config", data.NetworkData})
	}
	return writeISO(ctx, isoPath, NoCloudLabel, files)
}

// ConfigDrive writes an OpenStack config drive image to isoPath: label
// "config-2", files "openstack/latest/user_data" (always present),
// "openstack/latest/meta_data.json" and, when data has network data,
// "openstack/latest/network_data.json".
func ConfigDrive(ctx context.Context, isoPath string, data Data, meta ConfigDriveMetadata) error {
	m, err := json.Marshal(meta)
	if err != nil {
		return fmt.Errorf("cloudinit: image %s: meta_data.json: %w", isoPath, err)
	}
	const dir = "openstack/latest/"
	files := []isoFile{{dir + "user_data", data.UserData}, {dir + "meta_data.json", m}}
	if len(data.NetworkData) > 0 {
		files = append(files, isoFile{dir + "network_data.json", data.NetworkData})
	}
	return writeISO(ctx, isoPath, ConfigDriveLabel, files)
}
