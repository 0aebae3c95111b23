package goldentest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/internal/testutil"
)

// Domain returns a minimal valid domain without devices other than what
// the test adds: type kvm, a name, 256 MiB of memory and an hvm OS.
func Domain() *libvirtxml.Domain {
	return &libvirtxml.Domain{
		Type:   "kvm",
		Name:   "golden",
		Memory: &libvirtxml.DomainMemory{Value: 256, Unit: "MiB"},
		OS: &libvirtxml.DomainOS{
			Type: &libvirtxml.DomainOSType{Arch: "x86_64", Machine: "q35", Type: "hvm"},
		},
		Devices: &libvirtxml.DomainDeviceList{},
	}
}

// Path is testdata/<test name>/<name>.xml for the calling (sub)test; the
// test name is the top-level test's.
func Path(t *testing.T, name string) string {
	top, _, _ := cut(t.Name())
	return filepath.Join("testdata", top, name+".xml")
}

func cut(s string) (string, string, bool) {
	for i := range len(s) {
		if s[i] == '/' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// Check marshals dom and compares it with the golden file at path
// (rewriting the file when update is set), round-trips it through
// libvirtxml, validates it with virt-xml-validate and defines it with
// [Define].
func Check(t *testing.T, dom *libvirtxml.Domain, path string, update bool) {
	t.Helper()
	CheckSchema(t, dom, path, update)
	if err := Define(t, path); err != nil {
		t.Fatal(err)
	}
}

// CheckSchema is [Check] without [Define].
func CheckSchema(t *testing.T, dom *libvirtxml.Domain, path string, update bool) {
	t.Helper()
	got, err := dom.Marshal()
	require.NoError(t, err)
	got += "\n"
	if update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "golden file missing: run go test -update")
	require.Equal(t, string(want), got, "golden file %s differs: run go test -update and review the diff", path)

	var back libvirtxml.Domain
	require.NoError(t, back.Unmarshal(string(want)))
	again, err := back.Marshal()
	require.NoError(t, err)
	require.Equal(t, string(want), again+"\n", "libvirtxml round trip of %s", path)

	Validate(t, path)
}

// Define defines the domain of path in libvirt's in-process test driver
// (`virsh -c test:///default define path`), which runs libvirt's own
// parser and driver-independent validation, stricter than the schema
// (e.g. it refuses <portForward> without the passt backend). It returns
// the error libvirt reports; it skips (see testutil.Skip) without virsh.
func Define(t *testing.T, path string) error {
	t.Helper()
	bin, err := exec.LookPath("virsh")
	if err != nil {
		testutil.Skip(t, "virsh (Debian package libvirt-clients)")
	}
	out, err := exec.Command(bin, "-q", "-c", "test:///default", "define", path).CombinedOutput()
	if err != nil {
		return fmt.Errorf("virsh -c test:///default define %s: %w\n%s", path, err, out)
	}
	return nil
}

// Validate runs `virt-xml-validate path domain`.
func Validate(t *testing.T, path string) {
	t.Helper()
	bin, err := exec.LookPath("virt-xml-validate")
	if err != nil {
		testutil.Skip(t, "virt-xml-validate (Debian packages libvirt-clients, libxml2-utils)")
	}
	out, err := exec.Command(bin, path, "domain").CombinedOutput()
	require.NoError(t, err, "virt-xml-validate %s domain:\n%s", path, out)
}
