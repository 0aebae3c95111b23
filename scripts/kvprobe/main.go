//go:build ignore

// Command virtnet-kvprobe is a dev-time tool (scratch copy of KubeVirt, never
// committed): it renders domains with KubeVirt's converter and drives
// KubeVirt's hook manager against a sidecar, recording the gRPC exchange.
package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	v1 "kubevirt.io/api/core/v1"

	ephemeraldisk "kubevirt.io/kubevirt/pkg/ephemeral-disk"
	cmdv1 "kubevirt.io/kubevirt/pkg/handler-launcher-com/cmd/v1"
	"kubevirt.io/kubevirt/pkg/hooks"
	"kubevirt.io/kubevirt/pkg/network/namescheme"
	osdisk "kubevirt.io/kubevirt/pkg/os/disk"
	"kubevirt.io/kubevirt/pkg/testutils"
	"kubevirt.io/kubevirt/pkg/virt-api/webhooks/mutating-webhook/mutators"
	"kubevirt.io/kubevirt/pkg/virt-launcher/virtwrap"
	"kubevirt.io/kubevirt/pkg/virt-launcher/virtwrap/api"
	"kubevirt.io/kubevirt/pkg/virt-launcher/virtwrap/converter"
	archconverter "kubevirt.io/kubevirt/pkg/virt-launcher/virtwrap/converter/arch"
	convertertypes "kubevirt.io/kubevirt/pkg/virt-launcher/virtwrap/converter/types"
	"kubevirt.io/kubevirt/pkg/virt-launcher/virtwrap/network"
)

const uid = "8a0c6d1e-3b4f-5a6c-9d7e-1f2a3b4c5d6e"

// vmiFor is the test VMI: one interface with binding {name: plugin} on the
// pod network; secondary puts it on a Multus network next to a core
// (a VMI without a pod network).
func vmiFor(plugin string, secondary bool) *v1.VirtualMachineInstance {
	vmi := &v1.VirtualMachineInstance{
		TypeMeta:   metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance"},
		ObjectMeta: metav1.ObjectMeta{Name: "vmi-plugin", Namespace: "default", UID: uid},
		Spec: v1.VirtualMachineInstanceSpec{
			Domain: v1.DomainSpec{
				// set by the user (or the VM controller): fixed for reproducible output
				Firmware:  &v1.Firmware{UUID: uid},
				Resources: v1.ResourceRequirements{Requests: k8sv1.ResourceList{k8sv1.ResourceMemory: resource.MustParse("128Mi")}},
				Devices: v1.Devices{
					Disks: []v1.Disk{{Name: "containerdisk", DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusVirtio}}}},
				},
			},
			Volumes: []v1.Volume{{Name: "containerdisk", VolumeSource: v1.VolumeSource{ContainerDisk: &v1.ContainerDiskSource{Image: "quay.io/containerdisks/fedora:40"}}}},
		},
	}
	ours := v1.Interface{Name: "default", Binding: &v1.PluginBinding{Name: plugin}}
	if !secondary {
		vmi.Spec.Domain.Devices.Interfaces = []v1.Interface{ours}
		vmi.Spec.Networks = []v1.Network{*v1.DefaultPodNetwork()}
		return vmi
	}
	ours.Name = "blue"
	vmi.Spec.Domain.Devices.Interfaces = []v1.Interface{ours}
	vmi.Spec.Networks = []v1.Network{{Name: "blue", NetworkSource: v1.NetworkSource{Multus: &v1.MultusNetwork{NetworkName: "blue-net"}}}}
	return vmi
}

// prepare mutates the VMI as virt-api's mutating webhook does on create
// (ApplyNewVMIMutations with a default KubeVirt configuration, the
// finalizer) and sets the status virt-controller sets before virt-handler
// hands it to virt-launcher (phase, node, interfaces with the pod interface
// names). It returns virt-handler's SMBIOS option and balloon period.
func prepare(vmi *v1.VirtualMachineInstance) (*cmdv1.SMBios, uint, error) {
	cfg, _, _ := testutils.NewFakeClusterConfigUsingKVConfig(&v1.KubeVirtConfiguration{})
	sm := cfg.GetSMBIOS()
	smbios := &cmdv1.SMBios{Family: sm.Family, Product: sm.Product, Manufacturer: sm.Manufacturer, Sku: sm.Sku, Version: sm.Version}
	if err := mutators.ApplyNewVMIMutations(vmi, cfg); err != nil {
		return nil, 0, err
	}
	vmi.Finalizers = append(vmi.Finalizers, v1.VirtualMachineInstanceFinalizer)
	vmi.Status.Phase = v1.Scheduled
	vmi.Status.NodeName = "node01"
	for _, n := range vmi.Spec.Networks {
		st := v1.VirtualMachineInstanceNetworkInterface{Name: n.Name}
		if n.Pod != nil {
			st.PodInterfaceName = namescheme.PrimaryPodInterfaceName
		} else {
			st.PodInterfaceName = namescheme.GenerateHashedInterfaceName(n.Name)
			st.InfoSource = "multus-status"
		}
		vmi.Status.Interfaces = append(vmi.Status.Interfaces, st)
	}
	return smbios, uint(cfg.GetMemBalloonStatsPeriod()), nil
}

func convert(vmi *v1.VirtualMachineInstance, smbios *cmdv1.SMBios, period uint) (*api.Domain, error) {
	c := &convertertypes.ConverterContext{
		Architecture:              archconverter.NewConverter(runtime.GOARCH),
		VirtualMachine:            vmi,
		AllowEmulation:            true,
		HostArchitecture:          runtime.GOARCH,
		HypervisorDeviceAvailable: true,
		IsBlockPVC:                map[string]bool{},
		IsBlockDV:                 map[string]bool{},
		PermanentVolumes:          map[string]v1.VolumeStatus{},
		HotplugVolumes:            map[string]v1.VolumeStatus{},
		EphemeraldiskCreator:      ephemeraldisk.NewEphemeralDiskCreator(filepath.Join("/var/run/kubevirt-ephemeral-disks", "disk-data")),
		DisksInfo:                 map[string]*osdisk.DiskInfo{"containerdisk": {Format: "qcow2", VirtualSize: 5 << 30}},
		SMBios:                    smbios,
		MemBalloonStatsPeriod:     period,
		FreePageReporting:         true,
		SerialConsoleLog:          true,
		// virt-handler's options: an interface of a plugin without
		// domainAttachmentType has no entry.
		DomainAttachmentByInterfaceName: map[string]string{},
		HypervisorName:                  "kvm",
	}
	domain := &api.Domain{}
	if err := converter.Convert_v1_VirtualMachineInstance_To_api_Domain(vmi, domain, c); err != nil {
		return nil, err
	}
	api.NewDefaulter(runtime.GOARCH).SetObjectDefaults_Domain(domain)
	return domain, nil
}

func marshal(spec *api.DomainSpec) []byte {
	b, err := xml.MarshalIndent(spec, "", "\t")
	if err != nil {
		panic(err)
	}
	return b
}

func main() {
	mode := flag.String("mode", "convert", "convert | hooks")
	plugin := flag.String("plugin", "virtnet-bridge", "binding plugin name on the VMI's interface")
	secondary := flag.Bool("secondary", false, "the plugin's interface on a Multus network")
	out := flag.String("out", ".", "output directory")
	name := flag.String("name", "", "convert mode: write domain-<name>.xml and vmi-<name>.json (default: domain.xml, vmi.json)")
	hookDir := flag.String("hooks-dir", "", "hooks mode: virt-launcher's /var/run/kubevirt-hooks (the proxy's sockets)")
	realDir := flag.String("sidecar-dir", "", "hooks mode: the sidecar's own hooks directory")
	flag.Parse()
	if err := run(*mode, *plugin, *secondary, *out, *name, *hookDir, *realDir); err != nil {
		fmt.Fprintln(os.Stderr, "virtnet-kvprobe:", err)
		os.Exit(1)
	}
}

func run(mode, plugin string, secondary bool, out, name, hookDir, realDir string) error {
	vmi := vmiFor(plugin, secondary)
	smbios, period, err := prepare(vmi)
	if err != nil {
		return err
	}
	domain, err := convert(vmi, smbios, period)
	if err != nil {
		return err
	}
	vmiJSON, err := json.Marshal(vmi)
	if err != nil {
		return err
	}
	if mode == "convert" {
		suffix := ""
		if name != "" {
			suffix = "-" + name
		}
		if err := os.WriteFile(filepath.Join(out, "domain"+suffix+".xml"), append(marshal(&domain.Spec), '\n'), 0o644); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(out, "vmi"+suffix+".json"), append(vmiJSON, '\n'), 0o644)
	}
	if mode != "hooks" {
		return fmt.Errorf("-mode %q: convert or hooks", mode)
	}
	return runHooks(vmi, domain, out, hookDir, realDir)
}

// runHooks does what virt-launcher does with the hook sidecars on a first
// definition (cmd/virt-launcher: Collect; manager.go allocateHotplugPorts:
// OnDefineDomain with placeholders, then without, then with extra root
// ports; Shutdown at the end), through a proxy that records the frames.
func runHooks(vmi *v1.VirtualMachineInstance, domain *api.Domain, out, hookDir, realDir string) error {
	rec := &recorder{}
	entries, err := os.ReadDir(realDir)
	if err != nil {
		return err
	}
	sub := filepath.Join(hookDir, "hook-sidecar-0")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		return err
	}
	for _, e := range entries {
		l, err := net.Listen("unix", filepath.Join(sub, e.Name()))
		if err != nil {
			return err
		}
		defer l.Close()
		go rec.serve(l, filepath.Join(realDir, e.Name()))
	}
	m := hooks.NewManagerForProbe(hookDir)
	var steps []string
	if err := m.Collect(1, 30*time.Second); err != nil {
		return fmt.Errorf("collect: %w", err)
	}
	steps = append(steps, "Collect(1, 30s)")
	spec := &domain.Spec
	placeholders, extra, err := virtwrap.VirtnetHotplugCounts(vmi, spec)
	if err != nil {
		return err
	}
	define := func(s *api.DomainSpec, what string) (string, error) {
		res, err := m.OnDefineDomain(s, vmi)
		if err != nil {
			return "", fmt.Errorf("OnDefineDomain (%s): %w", what, err)
		}
		// as util.ApplySidecarHooks: the result must parse as KubeVirt's DomainSpec
		parsed := &api.DomainSpec{}
		if err := xml.Unmarshal([]byte(res), parsed); err != nil {
			return "", fmt.Errorf("result of OnDefineDomain (%s) does not parse as KubeVirt's DomainSpec: %w", what, err)
		}
		steps = append(steps, "OnDefineDomain: "+what)
		return res, nil
	}
	var final string
	if placeholders > 0 {
		if _, err := define(network.AppendPlaceholderInterfacesToTheDomain(vmi, spec, placeholders), fmt.Sprintf("%d hotplug placeholders", placeholders)); err != nil {
			return err
		}
	}
	if final, err = define(spec, "the domain (libvirt's address assignment between the calls not reproduced)"); err != nil {
		return err
	}
	if extra > 0 {
		with := spec.DeepCopy()
		virtwrap.VirtnetAppendRootPorts(with, extra)
		if final, err = define(with, fmt.Sprintf("%d extra pcie-root-port controllers", extra)); err != nil {
			return err
		}
	}
	if err := m.Shutdown(); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	steps = append(steps, "Shutdown")
	time.Sleep(500 * time.Millisecond)
	if err := os.WriteFile(filepath.Join(out, "hooks-domain.xml"), []byte(final+"\n"), 0o644); err != nil {
		return err
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	t := transcript{Steps: steps, Calls: rec.calls}
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "hooks-transcript.json"), append(b, '\n'), 0o644)
}

type transcript struct {
	Steps []string `json:"steps"`
	Calls []*call  `json:"calls"`
}

// call is one gRPC call as seen on the wire.
type call struct {
	Conn           int               `json:"conn"`
	Stream         uint32            `json:"stream"`
	RequestHeaders map[string]string `json:"requestHeaders"`
	Request        []byte            `json:"request"` // the protobuf message (base64)
	Status         string            `json:"grpcStatus"`
	Response       []byte            `json:"response"`
}

type recorder struct {
	mu    sync.Mutex
	conns int
	calls []*call
	byKey map[[2]uint32]*call
}

func (r *recorder) serve(l net.Listener, target string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("unix", target)
		if err != nil {
			c.Close()
			continue
		}
		r.mu.Lock()
		r.conns++
		id := r.conns
		r.mu.Unlock()
		go r.pipe(id, c, up, true)
		go r.pipe(id, up, c, false)
	}
}

func (r *recorder) get(conn int, stream uint32) *call {
	if r.byKey == nil {
		r.byKey = map[[2]uint32]*call{}
	}
	k := [2]uint32{uint32(conn), stream}
	if c := r.byKey[k]; c != nil {
		return c
	}
	c := &call{Conn: conn, Stream: stream, RequestHeaders: map[string]string{}}
	r.byKey[k] = c
	r.calls = append(r.calls, c)
	return c
}

// pipe copies src to dst and decodes the HTTP/2 frames on the way.
func (r *recorder) pipe(conn int, src, dst net.Conn, fromClient bool) {
	defer dst.Close()
	pr, pw := io.Pipe()
	go func() {
		_, _ = io.Copy(io.MultiWriter(dst, pw), src)
		pw.Close()
	}()
	if fromClient {
		preface := make([]byte, len(http2.ClientPreface))
		if _, err := io.ReadFull(pr, preface); err != nil {
			return
		}
	}
	fr := http2.NewFramer(io.Discard, pr)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	fr.MaxHeaderListSize = 1 << 20
	bufs := map[uint32]*bytes.Buffer{}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			_, _ = io.Copy(io.Discard, pr)
			return
		}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			r.mu.Lock()
			c := r.get(conn, f.StreamID)
			for _, h := range f.Fields {
				if fromClient {
					if h.Name != "user-agent" {
						c.RequestHeaders[h.Name] = h.Value
					}
				} else if h.Name == "grpc-status" {
					c.Status = h.Value
				}
			}
			r.mu.Unlock()
		case *http2.DataFrame:
			b := bufs[f.StreamID]
			if b == nil {
				b = &bytes.Buffer{}
				bufs[f.StreamID] = b
			}
			b.Write(f.Data())
			if f.StreamEnded() || (b.Len() >= 5 && b.Len() >= 5+int(uint32(b.Bytes()[1])<<24|uint32(b.Bytes()[2])<<16|uint32(b.Bytes()[3])<<8|uint32(b.Bytes()[4]))) {
				msg := b.Bytes()
				if len(msg) >= 5 {
					msg = append([]byte{}, msg[5:]...)
				}
				r.mu.Lock()
				c := r.get(conn, f.StreamID)
				if fromClient {
					c.Request = msg
				} else {
					c.Response = msg
				}
				r.mu.Unlock()
				delete(bufs, f.StreamID)
			}
		}
	}
}
