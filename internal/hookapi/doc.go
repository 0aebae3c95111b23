// Package hookapi holds the wire contract of KubeVirt's hook sidecar
// protocol (the gRPC services virt-launcher calls on a sidecar's unix
// socket) and virtnet's own hand-off record between the binding CNI plugin
// and the sidecar.
//
// The .proto files are virtnet's own, written to match the package,
// service, message and field names and numbers of KubeVirt 1.x's
// pkg/hooks/info/api_info.proto and pkg/hooks/v1alpha3/api_v1alpha3.proto,
// so that KubeVirt's virt-launcher talks to virtnet's sidecar unchanged.
// The generated Go code is committed; regenerate it with
//
//	go generate ./internal/hookapi
//
// which needs protoc (Debian package protobuf-compiler) and runs the
// pinned protoc-gen-go and protoc-gen-go-grpc through go run.
package hookapi

//go:generate ./generate.sh
