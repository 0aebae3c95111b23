package testutil

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"
)

// update is the -update flag of every test binary that imports this
// package: golden files are rewritten instead of compared. A flag is the
// one package-level variable here, as the flag package wants it.
var update = flag.Bool("update", false, "rewrite the golden files under testdata/ (then review the diff)")

// Update reports whether the test binary runs with -update.
func Update() bool { return *update }

// GoldenPath is testdata/<top-level test name>/<name><ext> for the calling
// (sub)test, the layout every golden file of the module uses.
func GoldenPath(tb testing.TB, name, ext string) string {
	top, _, _ := strings.Cut(tb.Name(), "/")
	return filepath.Join("testdata", top, name+ext)
}

// Golden compares got with the file at path, or writes it there first
// when the test runs with -update. It returns the file's content.
func Golden(tb testing.TB, path, got string) string {
	tb.Helper()
	if Update() {
		require.NoError(tb, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(tb, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(tb, err, "golden file missing: run go test -update")
	require.Equal(tb, string(want), got, "golden file %s differs: run go test -update and review the diff", path)
	return string(want)
}

// GoldenDomain returns a minimal valid domain with no devices, for tests
// that render fragments into it: type kvm, a name, 256 MiB of memory and
// an x86_64 q35 hvm OS.
func GoldenDomain() *libvirtxml.Domain {
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

// MarshalDomain is dom's XML as the golden files hold it (libvirtxml's
// indentation and a final newline).
func MarshalDomain(tb testing.TB, dom *libvirtxml.Domain) string {
	tb.Helper()
	s, err := dom.Marshal()
	require.NoError(tb, err)
	return s + "\n"
}

// CheckDomain is [CheckDomainSchema] and then [DefineDomain], which must
// succeed.
func CheckDomain(tb testing.TB, dom *libvirtxml.Domain, path string) {
	tb.Helper()
	CheckDomainSchema(tb, dom, path)
	if err := DefineDomain(tb, path); err != nil {
		tb.Fatal(err)
	}
}

// CheckDomainSchema marshals dom and compares it with the golden file at
// path ([Golden], so -update rewrites it), round-trips the file through
// libvirtxml's Unmarshal and Marshal, which must give it back unchanged,
// and validates it against libvirt's domain schema ([ValidateDomain]).
func CheckDomainSchema(tb testing.TB, dom *libvirtxml.Domain, path string) {
	tb.Helper()
	want := Golden(tb, path, MarshalDomain(tb, dom))
	var back libvirtxml.Domain
	require.NoError(tb, back.Unmarshal(want))
	require.Equal(tb, want, MarshalDomain(tb, &back), "libvirtxml round trip of %s", path)
	ValidateDomain(tb, path)
}

// DefineDomain defines the domain of the file at path in libvirt's
// in-process test driver (`virsh -c test:///default define path`), which
// runs libvirt's own parser and driver-independent validation, stricter
// than the schema (it refuses, for example, <portForward> without the
// passt backend). It returns what libvirt reports; without virsh it skips
// (see [Skip]).
func DefineDomain(tb testing.TB, path string) error {
	tb.Helper()
	bin, err := exec.LookPath("virsh")
	if err != nil {
		Skip(tb, "virsh (Debian package libvirt-clients)")
	}
	out, err := exec.Command(bin, "-q", "-c", "test:///default", "define", path).CombinedOutput()
	if err != nil {
		return fmt.Errorf("virsh -c test:///default define %s: %w\n%s", path, err, out)
	}
	return nil
}

// ValidateDomain runs `virt-xml-validate path domain`, which must accept
// the file; without it the test skips (see [Skip]).
func ValidateDomain(tb testing.TB, path string) {
	tb.Helper()
	bin, err := exec.LookPath("virt-xml-validate")
	if err != nil {
		Skip(tb, "virt-xml-validate (Debian packages libvirt-clients and libxml2-utils)")
	}
	out, err := exec.Command(bin, path, "domain").CombinedOutput()
	require.NoError(tb, err, "virt-xml-validate %s domain:\n%s", path, out)
}

// ValidateDomainXML is [ValidateDomain] for a document in memory (written
// to a file under tb.TempDir()).
func ValidateDomainXML(tb testing.TB, xml string) {
	tb.Helper()
	f := filepath.Join(tb.TempDir(), "domain.xml")
	require.NoError(tb, os.WriteFile(f, []byte(xml), 0o644))
	ValidateDomain(tb, f)
}
