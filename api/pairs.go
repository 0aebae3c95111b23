package api

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
)

// PodInterfaceNamesAnnotation selects how the pod interfaces of Multus
// networks are named: absent or "ordinal" gives KubeVirt v0.53's net1,
// net2, … in spec.networks order; "hashed" gives KubeVirt 1.x's
// "pod" + the first 11 hex digits of SHA-256(network name), which does not
// depend on the order of the networks.
const PodInterfaceNamesAnnotation = "virtnet.io/pod-interface-names"

// HashedPodInterface is KubeVirt 1.x's pod interface name of a Multus
// network.
func HashedPodInterface(network string) string {
	sum := sha256.Sum256([]byte(network))
	return "pod" + hex.EncodeToString(sum[:])[:11]
}

// Pod interface names.
const (
	// PrimaryPodInterface is the pod interface of the pod network (or of
	// a Multus default network).
	PrimaryPodInterface = "eth0"
	// SecondaryPodInterfacePrefix is followed by 1, 2, … for the other
	// Multus networks, in spec.networks order.
	SecondaryPodInterfacePrefix = "net"
)

// Pair is a VMI interface with the network of the same name and the name of
// the pod interface that network appears as.
type Pair struct {
	// Index is the interface's position in spec.domain.devices.interfaces.
	Index     int
	Interface *Interface
	Network   *Network
	// PodInterface is eth0 for the pod network or a Multus default,
	// net1, net2, … for the other Multus networks in spec.networks order
	// (see [PodInterfaceNamesAnnotation] for KubeVirt 1.x's names).
	PodInterface string
}

// Binding is the pair's binding method.
func (p Pair) Binding() string { return p.Interface.Binding() }

// Primary reports whether the pair's network is the VM's primary one: the
// pod network or a Multus default network (KubeVirt's test is "not a
// secondary Multus network"). Its tap is "tap0" whatever its pod interface
// is called. A pair built without its network is primary if its pod
// interface is eth0.
func (p Pair) Primary() bool {
	if p.Network == nil {
		return p.PodInterface == PrimaryPodInterface
	}
	return p.Network.Multus == nil || p.Network.Multus.Default
}

// Pairs matches every network of a validated VMI to its interface, in
// spec.networks order (the order KubeVirt plugs them in). It fails if a
// network has no interface.
func Pairs(vmi *VMI) ([]Pair, error) {
	byName := make(map[string]int, len(vmi.Spec.Domain.Devices.Interfaces))
	for i, iface := range vmi.Spec.Domain.Devices.Interfaces {
		byName[iface.Name] = i
	}
	pairs := make([]Pair, 0, len(vmi.Spec.Networks))
	secondary := 0
	for n := range vmi.Spec.Networks {
		net := &vmi.Spec.Networks[n]
		podIface := PrimaryPodInterface
		if net.Multus != nil && !net.Multus.Default {
			secondary++
			podIface = fmt.Sprintf("%s%d", SecondaryPodInterfacePrefix, secondary)
			if vmi.Metadata.Annotations[PodInterfaceNamesAnnotation] == "hashed" {
				podIface = HashedPodInterface(net.Name)
			}
		}
		i, ok := byName[net.Name]
		if !ok {
			return nil, &FieldError{Path: fmt.Sprintf("spec.networks[%d].name", n), Value: net.Name, Reason: "no interface with this name"}
		}
		pairs = append(pairs, Pair{
			Index:        i,
			Interface:    &vmi.Spec.Domain.Devices.Interfaces[i],
			Network:      net,
			PodInterface: podIface,
		})
	}
	return pairs, nil
}

// VCPUs is the VMI's vCPU count: sockets × cores × threads of
// [VMI.Topology]. A product that does not fit in a uint32 saturates at
// [math.MaxUint32] (so that [Validate] refuses it) instead of wrapping
// around to a small count.
func (v *VMI) VCPUs() uint32 {
	t := v.Topology()
	return uint32(min(uint64(t.Sockets)*uint64(t.Cores)*uint64(t.Threads), math.MaxUint32))
}

// CPUTopology is a guest CPU topology.
type CPUTopology struct {
	Sockets, Cores, Threads uint32
}

// Topology is the guest CPU topology as KubeVirt v0.53 derives it
// (virt-api's mutating webhook and the converter's vcpu package): each of
// spec.domain.cpu.sockets, cores and threads that is set, 1 for the
// others; when none of the three is set, sockets is
// spec.domain.resources.limits.cpu, else requests.cpu (rounded up to
// whole CPUs), else 1. A CPU quantity that does not parse counts as 1
// ([Validate] reports it).
func (v *VMI) Topology() CPUTopology {
	c := v.Spec.Domain.CPU
	if c != nil && (c.Sockets != 0 || c.Cores != 0 || c.Threads != 0) {
		return CPUTopology{Sockets: cmp.Or(c.Sockets, 1), Cores: cmp.Or(c.Cores, 1), Threads: cmp.Or(c.Threads, 1)}
	}
	t := CPUTopology{Sockets: 1, Cores: 1, Threads: 1}
	r := v.Spec.Domain.Resources
	q, ok := r.Limits["cpu"]
	if !ok {
		q, ok = r.Requests["cpu"]
	}
	if ok {
		if n, err := ParseCPUQuantity(q); err == nil && n > 0 {
			t.Sockets = n
		}
	}
	return t
}

// MultiQueue reports whether networkInterfaceMultiqueue is set.
func (v *VMI) MultiQueue() bool {
	m := v.Spec.Domain.Devices.NetworkInterfaceMultiQueue
	return m != nil && *m
}

// MaxQueues is KubeVirt's cap on interface queues.
const MaxQueues = 256

// Queues is the number of queues for a virtio interface: the vCPU count
// (at most [MaxQueues]) with multiqueue, else 0 (single queue).
func (v *VMI) Queues() int {
	if !v.MultiQueue() {
		return 0
	}
	return int(min(v.VCPUs(), MaxQueues))
}

// IstioProxy reports whether the VMI asks for Istio's sidecar (annotation
// sidecar.istio.io/inject, "true" in any case, as KubeVirt v0.53 reads it).
func (v *VMI) IstioProxy() bool {
	return strings.EqualFold(v.Metadata.Annotations[IstioInjectAnnotation], "true")
}

// MigratesOverUnix reports whether status.migrationTransport is Unix.
func (v *VMI) MigratesOverUnix() bool {
	return v.Status.MigrationTransport == MigrationTransportUnix
}
