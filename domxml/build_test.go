package domxml

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/testrig/testutil"
)

func load(t testing.TB, manifest string) *api.VMI {
	t.Helper()
	vmi, err := api.Load([]byte(manifest))
	require.NoError(t, err)
	return vmi
}

const minimal = `
kind: VirtualMachineInstance
metadata: {name: tiny, namespace: ns1, uid: 0f0e0d0c-0b0a-4909-8807-060504030201}
spec:
  domain:
    devices:
      disks: [{name: root}]
  volumes: [{name: root, containerDisk: {image: cirros}}]
`

func TestDomainUUID(t *testing.T) {
	a := load(t, minimal)
	u, err := uuid.Parse(DomainUUID(a))
	require.NoError(t, err)
	require.Equal(t, uuid.Version(5), u.Version())
	require.Equal(t, DomainUUID(a), DomainUUID(load(t, minimal)), "not stable")

	b := load(t, minimal)
	b.Metadata.UID = "another"
	require.NotEqual(t, DomainUUID(a), DomainUUID(b))

	noUID := load(t, minimal)
	noUID.Metadata.UID = ""
	require.Equal(t, uuid.NewSHA1(uuid.MustParse(UUIDNamespace), []byte("ns1/tiny")).String(), DomainUUID(noUID))

	fw := load(t, minimal)
	fw.Spec.Domain.Firmware = &api.Firmware{UUID: "5d307ca9-b3ef-428c-8861-06e72d69f223"}
	require.Equal(t, "5d307ca9-b3ef-428c-8861-06e72d69f223", DomainUUID(fw))
}

func TestGuestMemory(t *testing.T) {
	for _, tc := range []struct {
		name          string
		guest         string
		req, lim      string
		want          uint64
		wantErrOnPath string
	}{
		{name: "default", want: DefaultMemory},
		{name: "guest wins", guest: "1Gi", req: "2Gi", want: 1 << 30},
		{name: "requests", req: "512Mi", lim: "1Gi", want: 512 << 20},
		{name: "limits", lim: "1G", want: 1e9},
		{name: "zero", req: "0", wantErrOnPath: "spec.domain.resources.requests.memory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmi := load(t, minimal)
			if tc.guest != "" {
				vmi.Spec.Domain.Memory = &api.Memory{Guest: tc.guest}
			}
			vmi.Spec.Domain.Resources.Requests = map[string]string{}
			vmi.Spec.Domain.Resources.Limits = map[string]string{}
			if tc.req != "" {
				vmi.Spec.Domain.Resources.Requests["memory"] = tc.req
			}
			if tc.lim != "" {
				vmi.Spec.Domain.Resources.Limits["memory"] = tc.lim
			}
			got, err := guestMemory(vmi)
			if tc.wantErrOnPath != "" {
				var fe *api.FieldError
				require.ErrorAs(t, err, &fe)
				require.Equal(t, tc.wantErrOnPath, fe.Path)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestDiskDevName(t *testing.T) {
	for n, want := range map[int]string{0: "vda", 1: "vdb", 25: "vdz", 26: "vdaa", 27: "vdab", 701: "vdzz", 702: "vdaaa"} {
		require.Equal(t, want, diskDevName("vd", n), "n=%d", n)
	}
}

func TestBuildUnsupported(t *testing.T) {
	vmi, err := api.Decode([]byte(`
kind: VirtualMachineInstance
metadata: {name: gpu, namespace: ns1}
spec:
  domain:
    devices:
      gpus: [{name: g, deviceName: nvidia.com/T4}]
      watchdog: {name: w, i6300esb: {}}
`))
	require.NoError(t, err)
	api.SetDefaults(vmi)
	_, err = Build(vmi, Options{})
	var ue *api.UnsupportedError
	require.ErrorAs(t, err, &ue)
	require.Contains(t, err.Error(), "spec.domain.devices.gpus")
	require.Contains(t, err.Error(), "spec.domain.devices.watchdog")
}

func TestBuildErrors(t *testing.T) {
	vmi := load(t, minimal)
	vmi.Spec.Domain.Devices.Disks = append(vmi.Spec.Domain.Devices.Disks, api.Disk{Name: "ghost"})
	_, err := Build(vmi, Options{})
	require.ErrorIs(t, err, ErrVolume)
	require.ErrorContains(t, err, "domxml: spec.domain.devices.disks[1]: ")

	lun := load(t, minimal)
	lun.Spec.Domain.Devices.Disks[0] = api.Disk{Name: "root", LUN: &api.LUNTarget{}}
	_, err = Build(lun, Options{})
	require.ErrorIs(t, err, ErrVolume)
	require.ErrorContains(t, err, `volume "root": a lun needs a block volume`)

	hook := errors.New("hook failed")
	_, err = Build(load(t, minimal), Options{Interfaces: func(*libvirtxml.Domain) error { return hook }})
	require.ErrorIs(t, err, hook)
}

func TestEnsureRootPorts(t *testing.T) {
	pciAt := func(bus uint) *libvirtxml.DomainAddress {
		z := uint(0)
		return &libvirtxml.DomainAddress{PCI: &libvirtxml.DomainAddressPCI{Domain: &z, Bus: &bus, Slot: &z, Function: &z}}
	}
	for _, tc := range []struct {
		name    string
		machine string
		ifaces  []libvirtxml.DomainInterface
		want    []uint
	}{
		{name: "not q35", machine: "pc", ifaces: []libvirtxml.DomainInterface{{}}, want: nil},
		{name: "auto only", machine: "q35", ifaces: []libvirtxml.DomainInterface{{}, {}}, want: []uint{1, 2}},
		{name: "explicit bus and auto", machine: "pc-q35-7.2", ifaces: []libvirtxml.DomainInterface{{Address: pciAt(5)}, {}}, want: []uint{1, 5}},
		{name: "explicit on root bus", machine: "q35", ifaces: []libvirtxml.DomainInterface{{Address: pciAt(0)}}, want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dom := &libvirtxml.Domain{
				OS:      &libvirtxml.DomainOS{Type: &libvirtxml.DomainOSType{Machine: tc.machine, Type: "hvm"}},
				Devices: &libvirtxml.DomainDeviceList{Interfaces: tc.ifaces},
			}
			for range 2 { // idempotent
				require.NoError(t, EnsureRootPorts(dom))
				var got []uint
				for _, c := range dom.Devices.Controllers {
					require.Equal(t, "pcie-root-port", c.Model)
					got = append(got, *c.Index)
				}
				require.Equal(t, tc.want, got)
			}
		})
	}
}

func TestBuildValidates(t *testing.T) {
	for _, tc := range []struct {
		name, manifest string
		opts           Options
	}{
		{name: "minimal", manifest: minimal},
		{name: "efi without secure boot", manifest: `
kind: VirtualMachineInstance
metadata: {name: efi, namespace: ns1, uid: u-efi}
spec:
  domain:
    firmware: {bootloader: {efi: {secureBoot: false}}}
    clock: {utc: {offsetSeconds: 3600}}
    devices:
      autoattachSerialConsole: false
      autoattachGraphicsDevice: false
      useVirtioTransitional: true
      disks: [{name: root, lun: {bus: scsi}}, {name: cd, cdrom: {bus: scsi, readonly: false, tray: open}}]
  volumes:
  - {name: root, persistentVolumeClaim: {claimName: c, readOnly: true}}
  - {name: cd, hostDisk: {path: /srv/cd.iso}}
`, opts: Options{BlockVolumes: map[string]bool{"root": true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dom, err := Build(load(t, tc.manifest), tc.opts)
			require.NoError(t, err)
			xml, err := dom.Marshal()
			require.NoError(t, err)
			again, err := Build(load(t, tc.manifest), tc.opts)
			require.NoError(t, err)
			xml2, err := again.Marshal()
			require.NoError(t, err)
			require.Equal(t, xml, xml2, "not deterministic")
			f := filepath.Join(t.TempDir(), "d.xml")
			require.NoError(t, os.WriteFile(f, []byte(xml), 0o644))
			testutil.ValidateDomain(t, f)
			require.NoError(t, testutil.DefineDomain(t, f))
		})
	}
}

// TestPinTagged: a tagged interface without an address gets slot 0 of the
// lowest root-port bus no explicit address uses, and a root port for it;
// untagged and already placed devices are left alone; not on q35, nothing.
func TestPinTagged(t *testing.T) {
	at := func(bus uint) *libvirtxml.DomainAddress {
		z := uint(0)
		return &libvirtxml.DomainAddress{PCI: &libvirtxml.DomainAddressPCI{Domain: &z, Bus: &bus, Slot: &z, Function: &z}}
	}
	mk := func(machine string) *libvirtxml.Domain {
		return &libvirtxml.Domain{
			OS: &libvirtxml.DomainOS{Type: &libvirtxml.DomainOSType{Machine: machine, Type: "hvm"}},
			Devices: &libvirtxml.DomainDeviceList{
				Disks: []libvirtxml.DomainDisk{{Target: &libvirtxml.DomainDiskTarget{Bus: "virtio"}, Address: at(1)}},
				Interfaces: []libvirtxml.DomainInterface{
					{Alias: Alias("plain")},
					{Alias: Alias("tagged")},
					{Alias: Alias("placed"), Address: at(7)},
				},
			},
		}
	}
	tags := map[string]string{"tagged": "t1", "placed": "t2"}
	dom := mk("q35")
	require.NoError(t, PinTagged(tags, dom))
	ifs := dom.Devices.Interfaces
	require.Nil(t, ifs[0].Address)
	require.EqualValues(t, 2, *ifs[1].Address.PCI.Bus, "bus 1 is the disk's")
	require.EqualValues(t, 7, *ifs[2].Address.PCI.Bus)
	ports := map[uint]bool{}
	for _, c := range dom.Devices.Controllers {
		ports[*c.Index] = true
	}
	require.True(t, ports[2] && ports[7] && ports[1], "%v", ports)

	pc := mk("pc")
	require.NoError(t, PinTagged(tags, pc))
	require.Nil(t, pc.Devices.Interfaces[1].Address)
}
