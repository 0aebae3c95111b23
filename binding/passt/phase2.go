package passt

import (
	"errors"

	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/binding"
)

// Render adds the interface's device to the domain.
func (Binding) Render(in binding.RenderInput, dom *libvirtxml.Domain) error {
	return errors.New("passt: phase2 not implemented yet")
}
