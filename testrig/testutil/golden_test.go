package testutil

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"
)

func TestGoldenPath(t *testing.T) {
	require.Equal(t, filepath.Join("testdata", "TestGoldenPath", "a.xml"), GoldenPath(t, "a", ".xml"))
	t.Run("sub", func(t *testing.T) {
		require.Equal(t, filepath.Join("testdata", "TestGoldenPath", "b.json"), GoldenPath(t, "b", ".json"))
	})
}

// TestDefineDomainRefuses: the define check fails on a domain libvirt's
// parser refuses although its schema accepts it (a loader type next to
// firmware autoselection), so that it can catch what virt-xml-validate
// misses.
func TestDefineDomainRefuses(t *testing.T) {
	dom := GoldenDomain()
	ok := filepath.Join(t.TempDir(), "ok.xml")
	require.NoError(t, os.WriteFile(ok, []byte(MarshalDomain(t, dom)), 0o644))
	ValidateDomain(t, ok)
	require.NoError(t, DefineDomain(t, ok))

	dom.OS.Firmware = "efi"
	dom.OS.Loader = &libvirtxml.DomainLoader{Path: "/usr/share/OVMF/OVMF_CODE_4M.fd", Type: "pflash"}
	bad := filepath.Join(t.TempDir(), "bad.xml")
	xml := MarshalDomain(t, dom)
	require.NoError(t, os.WriteFile(bad, []byte(xml), 0o644))
	ValidateDomain(t, bad)
	require.ErrorContains(t, DefineDomain(t, bad), "firmware autoselection")
}
