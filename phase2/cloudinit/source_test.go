package cloudinit

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/virtnet/virtnet/api"
)

func TestDecodeSource(t *testing.T) {
	const path = "spec.volumes[2].cloudInitNoCloud"
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	ref := &api.LocalObjectReference{Name: "s"}
	tests := []struct {
		name    string
		src     *api.CloudInitSource
		files   map[string]string // in the secret dir; nil: no dir
		want    Data
		wantErr error
		errPath string // the field path the error names
		errFile string // the file it names, relative to the secret dir, "." for the dir
	}{
		{name: "inline user data", src: &api.CloudInitSource{UserData: "#cloud-config\n"},
			want: Data{UserData: []byte("#cloud-config\n")}},
		{name: "inline both", src: &api.CloudInitSource{UserData: "u", NetworkData: "version: 2\n"},
			want: Data{UserData: []byte("u"), NetworkData: []byte("version: 2\n")}},
		{name: "base64 both", src: &api.CloudInitSource{UserDataBase64: b64("#!/bin/sh\n"), NetworkDataBase64: b64("n")},
			want: Data{UserData: []byte("#!/bin/sh\n"), NetworkData: []byte("n")}},
		{name: "network only", src: &api.CloudInitSource{NetworkData: "n"}, want: Data{NetworkData: []byte("n")}},
		{name: "user data at the limit", src: &api.CloudInitSource{UserData: strings.Repeat("x", MaxInlineUserData)},
			want: Data{UserData: []byte(strings.Repeat("x", MaxInlineUserData))}},
		{name: "secret lowercase keys", src: &api.CloudInitSource{UserDataSecretRef: ref, NetworkDataSecretRef: ref},
			files: map[string]string{"userdata": "U", "networkdata": "N"},
			want:  Data{UserData: []byte("U"), NetworkData: []byte("N")}},
		{name: "secret camel-case keys", src: &api.CloudInitSource{UserDataSecretRef: ref, NetworkDataSecretRef: ref},
			files: map[string]string{"userData": "U", "networkData": "N"},
			want:  Data{UserData: []byte("U"), NetworkData: []byte("N")}},
		{name: "secret larger than the inline limit", src: &api.CloudInitSource{UserDataSecretRef: ref},
			files: map[string]string{"userdata": strings.Repeat("x", 10000)},
			want:  Data{UserData: []byte(strings.Repeat("x", 10000))}},
		{name: "secret user data, inline network data", src: &api.CloudInitSource{UserDataSecretRef: ref, NetworkData: "N"},
			files: map[string]string{"userdata": "U", "networkdata": "ignored"},
			want:  Data{UserData: []byte("U"), NetworkData: []byte("N")}},

		{name: "bad user base64", src: &api.CloudInitSource{UserDataBase64: "not base64!"},
			wantErr: ErrBadBase64, errPath: path + ".userDataBase64"},
		{name: "bad network base64", src: &api.CloudInitSource{UserData: "u", NetworkDataBase64: "QQ"},
			wantErr: ErrBadBase64, errPath: path + ".networkDataBase64"},
		{name: "user data over the limit", src: &api.CloudInitSource{UserData: strings.Repeat("x", MaxInlineUserData+1)},
			wantErr: ErrTooLarge, errPath: path + ".userData"},
		{name: "decoded user data over the limit", src: &api.CloudInitSource{UserDataBase64: b64(strings.Repeat("x", MaxInlineUserData+1))},
			wantErr: ErrTooLarge, errPath: path + ".userDataBase64"},
		{name: "network data over the limit", src: &api.CloudInitSource{NetworkData: strings.Repeat("x", MaxInlineNetworkData+1)},
			wantErr: ErrTooLarge, errPath: path + ".networkData"},
		{name: "secret over the limit", src: &api.CloudInitSource{UserDataSecretRef: ref},
			files:   map[string]string{"userdata": strings.Repeat("x", MaxSecretData+1)},
			wantErr: ErrTooLarge, errPath: path + ".secretRef", errFile: "userdata"},
		{name: "nil source", wantErr: ErrNoData, errPath: path},
		{name: "empty source", src: &api.CloudInitSource{}, wantErr: ErrNoData, errPath: path},
		{name: "empty secret", src: &api.CloudInitSource{UserDataSecretRef: ref}, files: map[string]string{"userdata": ""},
			wantErr: ErrNoData, errPath: path},
		{name: "two user sources", src: &api.CloudInitSource{UserData: "u", UserDataBase64: b64("u")},
			wantErr: ErrAmbiguous, errPath: path},
		{name: "two network sources", src: &api.CloudInitSource{NetworkData: "n", NetworkDataSecretRef: ref},
			wantErr: ErrAmbiguous, errPath: path},
		{name: "secret dir missing", src: &api.CloudInitSource{UserDataSecretRef: ref},
			wantErr: ErrSecretMissing, errPath: path + ".secretRef", errFile: "."},
		{name: "secret key missing", src: &api.CloudInitSource{UserDataSecretRef: ref},
			files: map[string]string{"networkdata": "N"}, wantErr: ErrSecretMissing, errPath: path + ".secretRef", errFile: "."},
		{name: "network secret key missing", src: &api.CloudInitSource{UserData: "u", NetworkDataSecretRef: ref},
			files: map[string]string{"userdata": "U"}, wantErr: ErrSecretMissing, errPath: path + ".networkDataSecretRef", errFile: "."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "vol")
			if tt.files != nil {
				require.NoError(t, os.Mkdir(dir, 0o755))
				for k, v := range tt.files {
					require.NoError(t, os.WriteFile(filepath.Join(dir, k), []byte(v), 0o600))
				}
			}
			got, err := DecodeSource(context.Background(), tt.src, path, dir)
			if tt.wantErr == nil {
				require.NoError(t, err)
				require.Equal(t, tt.want, got)
				return
			}
			require.ErrorIs(t, err, tt.wantErr)
			require.ErrorIs(t, err, ErrBadSource)
			require.ErrorContains(t, err, "bad source "+tt.errPath+": ")
			if tt.errFile != "" {
				require.ErrorContains(t, err, tt.errPath+": "+filepath.Join(dir, tt.errFile)+": ")
			}
			require.Equal(t, tt.wantErr != ErrSecretMissing, errors.Is(err, api.ErrInvalid), "matches api.ErrInvalid")
		})
	}
}
