//go:build ignore

package devicemanager

// Dropped by scripts/kubeletprobe.sh into the vendored copy of Kubernetes'
// pkg/kubelet/cm/devicemanager (never built in virtnet): the probe needs a
// manager on a socket of its own directory and to see when a plugin is
// connected.

import (
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
)

// VirtnetProbeNewManager is newManagerImpl on socketPath, without NUMA.
func VirtnetProbeNewManager(logger klog.Logger, socketPath string) (*ManagerImpl, error) {
	return newManagerImpl(logger, socketPath, nil, topologymanager.NewFakeManager(logger))
}

// VirtnetProbeConnected reports whether resource has a running endpoint.
func (m *ManagerImpl) VirtnetProbeConnected(resource string) bool {
	m.mutex.Lock()
	defer m.mutex.Unlock()
	e, ok := m.endpoints[resource]
	return ok && !e.e.isStopped()
}

// VirtnetProbeAllocated returns the device IDs of resource in use.
func (m *ManagerImpl) VirtnetProbeAllocated(resource string) []string {
	m.mutex.Lock()
	defer m.mutex.Unlock()
	return sets.List(m.allocatedDevices[resource])
}
