//go:build ignore

package virtwrap

// Dev-time export for virtnet's probe (scratch copy only, never committed).

import (
	v1 "kubevirt.io/api/core/v1"

	"kubevirt.io/kubevirt/pkg/virt-launcher/virtwrap/api"
)

// VirtnetHotplugCounts is allocateHotplugPorts' arithmetic.
func VirtnetHotplugCounts(vmi *v1.VirtualMachineInstance, spec *api.DomainSpec) (placeholders, extra int, err error) {
	placeholders, err = calculatePlaceholderCount(vmi)
	if err != nil {
		return 0, 0, err
	}
	extra, err = calculateExtraControllerCount(vmi, spec, placeholders)
	return placeholders, extra, err
}

// VirtnetAppendRootPorts is appendPCIeRootPortControllers.
func VirtnetAppendRootPorts(spec *api.DomainSpec, n int) { appendPCIeRootPortControllers(spec, n) }
