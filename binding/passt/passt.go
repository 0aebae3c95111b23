package passt

import (
	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
)

// DefaultPingGroup is the group of KubeVirt's qemu user, which passt runs
// as.
const DefaultPingGroup = 107

// Binding is the passt binding method. Its zero value is ready to use.
type Binding struct {
	// Discover, Plan and NeedsRecord come from NoKernelWork; Prepare
	// and Cleanup are passt's own.
	binding.NoKernelWork
	// PingGroup is the group ID passt runs as, which phase1 lets open ICMP
	// echo sockets; 0 means DefaultPingGroup.
	PingGroup int
}

// Method is "passt".
func (Binding) Method() string { return api.BindingPasst }

func (b Binding) pingGroup() int {
	if b.PingGroup == 0 {
		return DefaultPingGroup
	}
	return b.PingGroup
}
