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
	return writeSource(ctx, isoPath, NoCloudLabel, "", "user-data", "meta-data", "network-config", data, meta)
}

// ConfigDrive writes an OpenStack config drive image to isoPath: label
// "config-2", files "openstack/latest/user_data" (always present),
// "openstack/latest/meta_data.json" and, when data has network data,
// "openstack/latest/network_data.json".
func ConfigDrive(ctx context.Context, isoPath string, data Data, meta ConfigDriveMetadata) error {
	return writeSource(ctx, isoPath, ConfigDriveLabel, "openstack/latest/", "user_data", "meta_data.json", "network_data.json", data, meta)
}

// writeSource writes the image labelled label of a data source: in dir,
// the user data (always), meta as JSON and the network data (when there
// is some) under the names given.
func writeSource(ctx context.Context, isoPath, label, dir, user, metaName, network string, data Data, meta any) error {
	m, err := json.Marshal(meta)
	if err != nil {
		return fmt.Errorf("cloudinit: image %s: %s: %w", isoPath, metaName, err)
	}
	files := []isoFile{{dir + user, data.UserData}, {dir + metaName, m}}
	if len(data.NetworkData) > 0 {
		files = append(files, isoFile{dir + network, data.NetworkData})
	}
	return writeISO(ctx, isoPath, label, files)
}
