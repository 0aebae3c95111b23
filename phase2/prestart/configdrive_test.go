package prestart_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/phase2/cloudinit"
)

// TestConfigDriveDeviceMetadata: a tagged interface gets a guest PCI
// address before the image is written (a root port for it in the domain),
// and the ConfigDrive meta_data.json lists it as KubeVirt does: type nic,
// bus pci, that address, its MAC and the tag.
func TestConfigDriveDeviceMetadata(t *testing.T) {
	yaml := strings.Replace(vmiYAML, "{name: default, bridge: {}}", "{name: default, bridge: {}, tag: uplink}", 1)
	yaml = strings.Replace(yaml, "cloudInitNoCloud:", "cloudInitConfigDrive:", 1)
	e := newEnv(t, yaml)
	r, err := e.hook.Run(context.Background())
	require.NoError(t, err)
	require.NoError(t, r.Stop())

	nic := e.hook.Domain.Devices.Interfaces[0]
	require.NotNil(t, nic.Address, "tagged interface not pinned")
	bus := *nic.Address.PCI.Bus
	require.NotZero(t, bus)
	found := false
	for _, c := range e.hook.Domain.Devices.Controllers {
		if c.Model == "pcie-root-port" && *c.Index == bus {
			found = true
		}
	}
	require.True(t, found, "no root port %d for the pinned interface", bus)

	iso := diskByAlias(t, e.hook.Domain, "cloudinit").Source.File.File
	st, err := os.Stat(iso)
	require.NoError(t, err)
	require.Zero(t, st.Size()%cloudinit.ISOAlignment, "a writable image with cache none must be aligned")
	files := readISO(t, iso)
	var meta cloudinit.ConfigDriveMetadata
	require.NoError(t, json.Unmarshal([]byte(files["openstack/latest/meta_data.json"]), &meta), "%v", files)
	require.Equal(t, []cloudinit.DeviceMetadata{{
		Type: "nic", Bus: "pci", Address: "0000:01:00.0", MAC: "02:00:00:00:00:01", Tags: []string{"uplink"},
	}}, meta.Devices)
	require.EqualValues(t, 1, bus)
}
