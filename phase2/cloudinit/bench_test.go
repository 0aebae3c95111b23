package cloudinit

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkNoCloud measures building a NoCloud image with 2 KiB of user
// data and network data, atomic rename and syncs included.
func BenchmarkNoCloud(b *testing.B) {
	iso := filepath.Join(b.TempDir(), "noCloud.iso")
	data := Data{UserData: []byte(strings.Repeat("#", 2000)), NetworkData: []byte("version: 2\n")}
	meta := NoCloudMetadata{InstanceID: "vm.ns", LocalHostname: "vm"}
	for b.Loop() {
		if err := NoCloud(context.Background(), iso, data, meta); err != nil {
			b.Fatal(err)
		}
	}
}
