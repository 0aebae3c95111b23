//go:build ignore

package hooks

// NewManagerForProbe is a dev-time export (scratch copy only): the manager
// virt-launcher uses, on another sockets directory.
func NewManagerForProbe(baseDir string) Manager { return newManager(baseDir) }
