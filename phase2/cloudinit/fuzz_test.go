package cloudinit

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/virtnet/virtnet/api"
)

// FuzzCloudInitSource feeds arbitrary inline and base64 values to
// DecodeSource. It must never panic; an error must match ErrBadSource,
// name a field under the volume and match api.ErrInvalid; a success must
// return exactly the inline value or the decoded base64, within the limits.
//
//	go test ./phase2/cloudinit -run '^$' -fuzz FuzzCloudInitSource -fuzztime 60s
func FuzzCloudInitSource(f *testing.F) {
	f.Add("#cloud-config\n", "", "", "")
	f.Add("", base64.StdEncoding.EncodeToString([]byte("#!/bin/sh\n")), "version: 2\n", "")
	f.Add("", "", "", "dmVyc2lvbjogMQo=")
	f.Add("", "QQ", "", "")
	f.Add("u", "dQ==", "", "")
	f.Add("", "", "", "")
	f.Add("", "////\n////", "", "AA==AA==")
	const path = "spec.volumes[0].cloudInitNoCloud"
	f.Fuzz(func(t *testing.T, userData, userDataBase64, networkData, networkDataBase64 string) {
		src := &api.CloudInitSource{UserData: userData, UserDataBase64: userDataBase64,
			NetworkData: networkData, NetworkDataBase64: networkDataBase64}
		got, err := DecodeSource(context.Background(), src, path, "")
		if err != nil {
			if !errors.Is(err, ErrBadSource) || !errors.Is(err, api.ErrInvalid) {
				t.Fatalf("error %v (%T) is not an invalid-source error", err, err)
			}
			if !strings.HasPrefix(err.Error(), "cloudinit: bad source "+path) {
				t.Fatalf("error %q does not name a field under %q", err, path)
			}
			return
		}
		check := func(what string, raw, b64 string, out []byte, limit int) {
			want := []byte(raw)
			if raw == "" && b64 != "" {
				var derr error
				want, derr = base64.StdEncoding.DecodeString(b64)
				if derr != nil {
					t.Fatalf("%s: accepted invalid base64 %q", what, b64)
				}
			}
			if !bytes.Equal(want, out) {
				t.Fatalf("%s: got %q, want %q", what, out, want)
			}
			if len(out) > limit {
				t.Fatalf("%s: %d bytes over the limit %d", what, len(out), limit)
			}
		}
		check("user data", userData, userDataBase64, got.UserData, MaxInlineUserData)
		check("network data", networkData, networkDataBase64, got.NetworkData, MaxInlineNetworkData)
		if len(got.UserData) == 0 && len(got.NetworkData) == 0 {
			t.Fatal("success without data")
		}
	})
}
