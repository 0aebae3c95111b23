//go:build ignore

// Command virtnet-kvprobe-iface is a dev-time tool (built in a scratch copy
// of KubeVirt by scripts/kvprobe-iface.sh, never committed there): it runs
// KubeVirt's own mutating webhook and converter on VMI manifests and writes
// the domain each gives, so that virtnet's rendering of KubeVirt 1.x's
// interface fields can be compared with KubeVirt's (domxml
// TestKubeVirt19Interfaces). Only its output is committed.
package main

import (
	"encoding/xml"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"sigs.k8s.io/yaml"

	v1 "kubevirt.io/api/core/v1"
	ephemeraldisk "kubevirt.io/kubevirt/pkg/ephemeral-disk"
	"kubevirt.io/kubevirt/pkg/network/domainspec"
	"kubevirt.io/kubevirt/pkg/network/namescheme"
	"kubevirt.io/kubevirt/pkg/testutils"
	"kubevirt.io/kubevirt/pkg/virt-api/webhooks/mutating-webhook/mutators"
	"kubevirt.io/kubevirt/pkg/virt-launcher/virtwrap/api"
	"kubevirt.io/kubevirt/pkg/virt-launcher/virtwrap/converter"
	archconverter "kubevirt.io/kubevirt/pkg/virt-launcher/virtwrap/converter/arch"
	convertertypes "kubevirt.io/kubevirt/pkg/virt-launcher/virtwrap/converter/types"
)

func main() {
	out := flag.String("out", ".", "output directory: <manifest name>.xml per manifest")
	flag.Parse()
	for _, path := range flag.Args() {
		if err := convertFile(path, *out); err != nil {
			fmt.Fprintln(os.Stderr, path+":", err)
			os.Exit(1)
		}
	}
}

func convertFile(path, out string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	vmi := &v1.VirtualMachineInstance{}
	if err := yaml.UnmarshalStrict(data, vmi); err != nil {
		return err
	}
	cfg, _, _ := testutils.NewFakeClusterConfigUsingKVConfig(&v1.KubeVirtConfiguration{})
	if err := mutators.ApplyNewVMIMutations(vmi, cfg); err != nil {
		return err
	}
	// virt-controller's status: the pod interface names.
	for _, n := range vmi.Spec.Networks {
		st := v1.VirtualMachineInstanceNetworkInterface{Name: n.Name, PodInterfaceName: namescheme.PrimaryPodInterfaceName}
		if n.Multus != nil && !n.Multus.Default {
			st.PodInterfaceName = namescheme.GenerateHashedInterfaceName(n.Name)
		}
		vmi.Status.Interfaces = append(vmi.Status.Interfaces, st)
	}
	// The KubeVirt CR registers managed-tap as a managedTap plugin.
	bindings := map[string]v1.InterfaceBindingPlugin{"managed-tap": {DomainAttachmentType: v1.ManagedTap}}
	c := &convertertypes.ConverterContext{
		Architecture:                    archconverter.NewConverter(runtime.GOARCH),
		VirtualMachine:                  vmi,
		AllowEmulation:                  true,
		HostArchitecture:                runtime.GOARCH,
		HypervisorDeviceAvailable:       true,
		IsBlockPVC:                      map[string]bool{},
		IsBlockDV:                       map[string]bool{},
		PermanentVolumes:                map[string]v1.VolumeStatus{},
		HotplugVolumes:                  map[string]v1.VolumeStatus{},
		EphemeraldiskCreator:            ephemeraldisk.NewEphemeralDiskCreator(filepath.Join("/var/run/kubevirt-ephemeral-disks", "disk-data")),
		DomainAttachmentByInterfaceName: domainspec.DomainAttachmentByInterfaceName(vmi.Spec.Domain.Devices.Interfaces, bindings),
		HypervisorName:                  "kvm",
	}
	domain := &api.Domain{}
	if err := converter.Convert_v1_VirtualMachineInstance_To_api_Domain(vmi, domain, c); err != nil {
		return err
	}
	api.NewDefaulter(runtime.GOARCH).SetObjectDefaults_Domain(domain)
	b, err := xml.MarshalIndent(domain.Spec, "", "  ")
	if err != nil {
		return err
	}
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	return os.WriteFile(filepath.Join(out, name+".xml"), append(b, '\n'), 0o644)
}
