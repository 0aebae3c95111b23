package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"
)

// TestPreviewsDeploy: every VM manifest the project ships in deploy/
// previews (its interfaces bound to virtnet's KubeVirt 1.x plugin names),
// and the domain is valid.
func TestPreviewsDeploy(t *testing.T) {
	files, err := filepath.Glob("../../deploy/*.yaml")
	require.NoError(t, err)
	kindRE := regexp.MustCompile(`(?m)^kind: (VirtualMachine|VirtualMachineInstance)$`)
	ifaceRE := regexp.MustCompile(`(?m)^\s+- name: \S+\n\s+binding: \{name: \S+\}`)
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		if !kindRE.Match(b) {
			continue
		}
		n++
		t.Run(filepath.Base(f), func(t *testing.T) {
			stdout, stderr, code := runMain(t, "-vmi", f, "-interface-type", "ethernet")
			require.Equal(t, 0, code, "stderr: %s", stderr)
			validateXML(t, stdout)
			var dom libvirtxml.Domain
			require.NoError(t, dom.Unmarshal(stdout))
			require.Len(t, dom.Devices.Interfaces, len(ifaceRE.FindAll(b, -1)))
		})
	}
	require.NotZero(t, n, "deploy/ has no VM manifest")
}

// TestVMDocument: a multi-document file gives its one VM; none or two
// are refused naming the documents' kinds.
func TestVMDocument(t *testing.T) {
	vm := "kind: VirtualMachine\nmetadata: {name: a}\n"
	cm := "kind: ConfigMap\nmetadata: {name: c}\n"
	for _, tc := range []struct {
		name, in, want, err string
	}{
		{"single document", vm, vm, ""},
		{"VM among others", cm + "---\n" + vm + "---\n", vm, ""},
		{"leading separator: a single document, as it is", "---\n" + vm, "---\n" + vm, ""},
		{"inline document after the marker", cm + "--- " + vm, vm, ""},
		{"end marker", vm + "...\n" + cm, vm, ""},
		{"no VM", cm + "---\n" + cm, "", "2 documents (ConfigMap, ConfigMap): want exactly one VirtualMachine or VirtualMachineInstance, found 0"},
		{"two VMs", vm + "---\n" + vm, "", "found 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := vmDocument([]byte(tc.in))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, string(got))
		})
	}
}
