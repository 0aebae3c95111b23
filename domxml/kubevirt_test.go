package domxml_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/domxml"
)

var kubevirtReport = flag.Bool("kubevirt.report", false, "TestKubeVirtComparison prints every difference, allowed or not")

// placeholderUID is the metadata.uid KubeVirt was given (testdata/kubevirt/README.md) for a
// manifest without one (the API server would give it a random one).
const placeholderUID = "00000000-0000-4000-8000-0000000000a1"

// standaloneUUID is the firmware UUID KubeVirt was given for a standalone VMI
// without one, where KubeVirt picks a random one.
const standaloneUUID = "00000000-0000-4000-8000-000000000000"

// allowed is a deliberate difference from KubeVirt v0.53.2's domain:
// Path matches the element path (see elements), Side which side has what
// the other does not or has otherwise ("ours", "kubevirt", "both" for a
// differing value).
type allowed struct {
	Path *regexp.Regexp
	Side string
	Why  string
}

func allow(path, side, why string) allowed {
	return allowed{Path: regexp.MustCompile("^" + path + "$"), Side: side, Why: why}
}

// allowList lists the deliberate differences. Every entry must match at
// least one difference of some manifest (TestKubeVirtComparison fails on
// an unused entry), so the list never outlives what it explains.
var allowList = []allowed{
	// libvirt defaults that virtnet writes out and KubeVirt leaves to
	// libvirt: the same domain once libvirt parsed it.
	allow(`domain/clock`, "ours", "offset utc is libvirt's default clock; KubeVirt writes no <clock> unless the VMI sets one"),
	allow(`domain/devices/channel\[org.qemu.guest_agent.0\]/source`, "ours", "mode bind is libvirt's default for a unix channel (libvirt picks the socket path either way)"),
	allow(`domain/features/hyperv`, "both", "mode custom is libvirt's default hyperv mode"),
	allow(`domain/features/smm`, "both", "<smm state='on'/> and <smm/> mean the same to libvirt"),
	// KubeVirt's own bookkeeping, read back by virt-launcher only.
	allow(`domain/metadata(/.*)?`, "kubevirt", "KubeVirt's <metadata><kubevirt> (uid, grace period) is virt-launcher's bookkeeping, nothing the guest or libvirt uses"),
	// Paths virtnet chooses (Options) where KubeVirt's are fixed.
	allow(`domain/devices/disk\[ua-[a-z-]+\]/source`, "both", "cloud-init and sysprep images live under Options.CloudInitDir/cloud-init-data (one directory virtnet owns), not /var/run/libvirt/cloud-init-dir"),
	// EFI: Debian's OVMF files, named as KubeVirt names its own.
	allow(`domain/os/loader`, "both", "Debian's 4 MiB OVMF code file (Options.OVMFDir) instead of KubeVirt image's OVMF_CODE(.secboot).fd"),
	allow(`domain/os/nvram`, "both", "the variable store from Debian's templates, kept in <PrivateDir>/libvirt/qemu/nvram (persistent) instead of /tmp"),
}

func (a allowed) matches(d difference) bool {
	side := "both"
	switch d.Missing {
	case "ours":
		side = "kubevirt"
	case "kubevirt":
		side = "ours"
	}
	return a.Side == side && a.Path.MatchString(d.Path)
}

// refusedManifests are the compared manifests virtnet refuses, and the
// field its error names.
var refusedManifests = map[string]string{
	"vmi-gpu": "spec.domain.devices.gpus",
}

// comparisonManifest is the manifest KubeVirt rendered into xmlFile.
func comparisonManifest(t *testing.T, xmlFile string) string {
	base := strings.TrimSuffix(filepath.Base(xmlFile), filepath.Ext(xmlFile)) + ".yaml"
	for _, dir := range []string{"testdata/kubevirt/manifests", "../api/testdata/kubevirt"} {
		p := filepath.Join(dir, base)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatalf("no manifest for %s", xmlFile)
	return ""
}

// oursFor builds our domain of a manifest as the script built KubeVirt's:
// the placeholder uid and firmware UUID where the manifest has none.
func oursFor(t *testing.T, manifest string) (*node, error) {
	data, err := os.ReadFile(manifest)
	require.NoError(t, err)
	vmi, err := api.Decode(data)
	require.NoError(t, err)
	if vmi.Metadata.UID == "" {
		vmi.Metadata.UID = placeholderUID
	}
	if strings.Contains(string(data), "kind: VirtualMachineInstance") {
		if vmi.Spec.Domain.Firmware == nil {
			vmi.Spec.Domain.Firmware = &api.Firmware{}
		}
		if vmi.Spec.Domain.Firmware.UUID == "" {
			vmi.Spec.Domain.Firmware.UUID = standaloneUUID
		}
	}
	api.SetDefaults(vmi)
	if err := api.Validate(vmi); err != nil {
		return nil, err
	}
	dom, err := domxml.Build(vmi, comparisonOptions)
	if err != nil {
		return nil, err
	}
	// What the preStartHook's disk step decides, with the script's
	// assumptions: O_DIRECT everywhere, no preallocated image.
	for i := range dom.Devices.Disks {
		require.NoError(t, domxml.SetDriverModes(&dom.Devices.Disks[i], true, false))
	}
	x, err := dom.Marshal()
	require.NoError(t, err)
	n, err := parseXML([]byte(x))
	require.NoError(t, err)
	return n, nil
}

// comparisonOptions are the Options of the comparison: the pod cpuset
// the script gives KubeVirt's converter, and v0.53's domain: no spare root
// ports.
var comparisonOptions = domxml.Options{CPUSet: []int{2, 3, 4, 5, 6, 7, 8, 9}, HotplugPorts: domxml.HotplugPortsNone}

// kubevirtFor reads KubeVirt's rendered domain and removes what
// domxml.Build does not render by design: the network interfaces and
// slirp's qemu:commandline (the bindings add them; their own tests
// cover them).
func kubevirtFor(t *testing.T, xmlFile string) *node {
	data, err := os.ReadFile(xmlFile)
	require.NoError(t, err)
	n, err := parseXML(data)
	require.NoError(t, err)
	walk(n, func(parent, c *node) bool {
		return !(parent.name == "devices" && c.name == "interface") && c.name != "commandline"
	})
	// libvirt takes a domain without <uuid> from its SMBIOS system uuid
	// (virDomainDefParseXML): write what libvirt would.
	if n.child("uuid") == nil {
		if si := n.child("sysinfo"); si != nil {
			if sys := si.child("system"); sys != nil {
				for _, e := range sys.children {
					if e.attrs["name"] == "uuid" {
						n.children = append(n.children, &node{name: "uuid", attrs: map[string]string{}, text: e.text})
					}
				}
			}
		}
	}
	return n
}

// TestKubeVirtComparison compares domxml.Build with the domains KubeVirt
// v0.53.2 rendered from the same manifests (testdata/kubevirt, see its
// README), element by element after normalise; every difference must be
// on allowList.
func TestKubeVirtComparison(t *testing.T) {
	files, err := filepath.Glob("testdata/kubevirt/*.xml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	used := make([]bool, len(allowList))
	var summary []string
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".xml")
		t.Run(name, func(t *testing.T) {
			ours, err := oursFor(t, comparisonManifest(t, f))
			if field, ok := refusedManifests[name]; ok {
				// KubeVirt renders it, virtnet refuses it by field.
				require.ErrorContains(t, err, field)
				summary = append(summary, fmt.Sprintf("%s: refused (%s)", name, field))
				return
			}
			require.NoError(t, err)
			kv := kubevirtFor(t, f)
			normalise(ours)
			normalise(kv)
			diffs := compare(ours, kv)
			var unexplained []string
			for _, d := range diffs {
				why := ""
				for i, a := range allowList {
					if a.matches(d) {
						used[i], why = true, a.Why
						break
					}
				}
				if *kubevirtReport {
					mark := "DIFF"
					if why != "" {
						mark = "allowed"
					}
					fmt.Printf("%s: %s: %s\n", name, mark, d)
				}
				if why == "" {
					unexplained = append(unexplained, d.String())
				}
			}
			summary = append(summary, fmt.Sprintf("%s: %d differing elements, %d unexplained", name, len(diffs), len(unexplained)))
			require.Empty(t, unexplained, "differences from KubeVirt v0.53.2 not on the allow-list")
		})
	}
	if *kubevirtReport {
		fmt.Println(strings.Join(summary, "\n"))
	}
	if !t.Failed() {
		for i, u := range used {
			require.True(t, u, "allow-list entry %q (%s) matches no difference: remove it", allowList[i].Path, allowList[i].Why)
		}
	}
}
