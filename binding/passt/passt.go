package passt

import (
	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
)

// Binding is the passt binding method. Its zero value is ready to use.
type Binding struct {
	// Discover, Plan and NeedsRecord come from NoKernelWork; Prepare
	// and Cleanup are passt's own.
	binding.NoKernelWork
	// PingGroup is the group ID passt runs as, which phase1 lets open ICMP
	// echo sockets; 0 means the tap owner phase1 was given
	// (binding.Input.TapOwner: the user QEMU and passt run as, root for
	// a root VMI, api.QemuID for a non-root one).
	PingGroup int
}

// Method is "passt".
func (Binding) Method() string { return api.BindingPasst }

func (b Binding) pingGroup(in binding.Input) int {
	if b.PingGroup != 0 {
		return b.PingGroup
	}
	return in.TapOwner
}
