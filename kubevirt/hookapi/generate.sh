#!/bin/sh
# Regenerates the Go code of the protocol buffers in this directory.
# Needs protoc (Debian: protobuf-compiler); the Go plugins are pinned here.
case "${1:-}" in -h | --help) sed -n '2,/^[^#]/{/^#/{s/^# \{0,1\}//;p}}' "$0"; exit 0 ;; esac
set -eu
cd "$(dirname "$0")"
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
GOBIN=$bin GOFLAGS= go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
GOBIN=$bin GOFLAGS= go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.5.1
for f in info/info.proto v1alpha3/v1alpha3.proto handoff/handoff.proto; do
	PATH=$bin:$PATH protoc -I. --go_out=. --go_opt=paths=source_relative \
		--go-grpc_out=. --go-grpc_opt=paths=source_relative "$f"
done
