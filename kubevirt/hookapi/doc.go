// Package hookapi holds the wire contract of KubeVirt's hook sidecar
// protocol (the gRPC services virt-launcher calls on a sidecar's unix
// socket) and virtnet's own hand-off record between the binding CNI plugin
// and the sidecar.
//
// The .proto files are virtnet's own, written to match the package,
// service, message and field names and numbers of KubeVirt 1.x's
// pkg/hooks/info/api_info.proto and pkg/hooks/v1alpha3/api_v1alpha3.proto,
// so that KubeVirt's virt-launcher talks to virtnet's sidecar unchanged.
// # Where the contract comes from
//
// Read in KubeVirt v1.9.0 (commit 79d34c1762169e5b0370ec491cef5ca12e6b504c)
// and checked against its own hook manager by
// cmd/virtnet-binding-sidecar's TestKubeVirtHookManager:
//
//   - messages, fields and numbers: pkg/hooks/info/api_info.proto,
//     pkg/hooks/v1alpha3/api_v1alpha3.proto; hook point names:
//     pkg/hooks/info/info.go; the version string: pkg/hooks/v1alpha3/v1alpha3.go;
//   - discovery and calls: pkg/hooks/manager.go (every file one directory
//     below /var/run/kubevirt-hooks is dialled, sockets are counted by
//     file name, the newest version a sidecar lists is used, Shutdown only
//     exists in v1alpha3, Info has 1 s, the callbacks 1 min, one connection
//     per call) and pkg/util/net/grpc/grpc.go (insecure, authority
//     "localhost"); the directory and the CONTAINER_NAME and
//     NETWORK_BINDING_PLUGIN_NAME variables: pkg/hooks/hooks.go, set per
//     container in pkg/virt-controller/services/template.go;
//   - what OnDefineDomain carries and when: the manager marshals the domain
//     with xml.MarshalIndent and the VMI with json.Marshal; virt-launcher
//     runs every definition through it (pkg/virt-launcher/virtwrap/util
//     ApplySidecarHooks), first with its hotplug placeholders, then without
//     (pkg/virt-launcher/virtwrap/manager.go allocateHotplugPorts,
//     pkg/virt-launcher/virtwrap/network/nichotplug.go).
//
// The generated Go code is committed; regenerate it with
//
//	go generate ./kubevirt/hookapi
//
// which needs protoc (Debian package protobuf-compiler) and runs the
// pinned protoc-gen-go and protoc-gen-go-grpc through go run.
//
// Outside the compatibility promise: the module's programs are this
// package's users; its API changes with them, whatever the version
// (testrig/apicompat leaves kubevirt/ out).
package hookapi

//go:generate ./generate.sh
