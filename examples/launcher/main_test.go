package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFlags(t *testing.T) {
	vmi := filepath.Join(t.TempDir(), "vmi.yaml")
	require.NoError(t, os.WriteFile(vmi, []byte("kind: VirtualMachineInstance\nmetadata: {name: x}\nspec: {domain: {devices: {interfaces: [{name: default, bridge: {}, masquerade: {}}]}}, networks: [{name: default, pod: {}}]}\n"), 0o644))
	tests := []struct {
		name string
		args []string
		want int
		msg  string
	}{
		{"no vmi", []string{"-netns", "pod"}, 2, "-vmi is required"},
		{"no netns", []string{"-vmi", "x.yaml"}, 2, "-netns is required"},
		{"extra args", []string{"-vmi", "x", "-netns", "y", "z"}, 2, "unexpected arguments"},
		{"bad interface type", []string{"-vmi", "x", "-netns", "y", "-interface-type", "tap"}, 2, `-interface-type "tap"`},
		{"unknown flag", []string{"-nope"}, 2, "flag provided but not defined"},
		{"help", []string{"-h"}, 0, "-interface-type"},
		{"missing file", []string{"-vmi", "/nonexistent.yaml", "-netns", "y"}, 1, "no such file"},
		{"invalid vmi", []string{"-vmi", vmi, "-netns", "y"}, 2, "spec.domain.devices.interfaces[0]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			require.Equal(t, tc.want, run(context.Background(), tc.args, &out, &errb), "stderr: %s", errb.String())
			require.Contains(t, errb.String(), tc.msg)
		})
	}
}

func TestNetnsPath(t *testing.T) {
	require.Equal(t, "/var/run/netns/pod", netnsPath("pod"))
	require.Equal(t, "/proc/1/ns/net", netnsPath("/proc/1/ns/net"))
}
