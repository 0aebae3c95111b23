package cloudinit

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/internal/safefile"
)

// Size limits. The inline limits are api.Validate's (KubeVirt v0.53's
// webhook's: 2048 bytes each, decoded); KubeVirt sets no limit on secrets,
// so MaxSecretData is Kubernetes' own cap on a secret's size.
const (
	MaxInlineUserData    = api.MaxInlineUserData
	MaxInlineNetworkData = api.MaxInlineNetworkData
	MaxSecretData        = 1 << 20
)

// Key file names of a mounted cloud-init secret, in the order they are
// tried (KubeVirt mounts the secret's key under both spellings).
var (
	userDataKeys    = [...]string{"userdata", "userData"}
	networkDataKeys = [...]string{"networkdata", "networkData"}
)

// Data is the decoded input of one cloud-init volume.
type Data struct {
	UserData    []byte
	NetworkData []byte
}

// DecodeSource decodes src, the volume source at fieldPath (for example
// "spec.volumes[0].cloudInitNoCloud"). Inline values are taken as they are,
// base64 values are decoded with the standard alphabet, and secret
// references are read from secretDir, the directory the volume's secrets are
// mounted in (<SecretDir>/<volume>, see [Builder]). At most one user data
// source and one network data source may be set, and at least one of the
// two must yield data. A secret key file that is not a regular file (a
// FIFO, a device, …) is refused with [ErrNotRegular] without blocking, a
// link leading out of secretDir is refused, and ctx ends the read.
func DecodeSource(ctx context.Context, src *api.CloudInitSource, fieldPath, secretDir string) (Data, error) {
	if src == nil {
		return Data{}, sourceError(fieldPath, "", ErrNoData)
	}
	user, err := decodeOne(ctx, fieldPath, secretDir, part{
		raw: src.UserData, rawKey: "userData",
		b64: src.UserDataBase64, b64Key: "userDataBase64",
		ref: src.UserDataSecretRef, refKey: "secretRef",
		keys: userDataKeys[:], max: MaxInlineUserData,
	})
	if err != nil {
		return Data{}, err
	}
	network, err := decodeOne(ctx, fieldPath, secretDir, part{
		raw: src.NetworkData, rawKey: "networkData",
		b64: src.NetworkDataBase64, b64Key: "networkDataBase64",
		ref: src.NetworkDataSecretRef, refKey: "networkDataSecretRef",
		keys: networkDataKeys[:], max: MaxInlineNetworkData,
	})
	if err != nil {
		return Data{}, err
	}
	if len(user) == 0 && len(network) == 0 {
		return Data{}, sourceError(fieldPath, "", ErrNoData)
	}
	return Data{UserData: user, NetworkData: network}, nil
}

// part is one of user data and network data: its three possible sources
// and their JSON keys.
type part struct {
	raw, rawKey string
	b64, b64Key string
	ref         *api.LocalObjectReference
	refKey      string
	keys        []string
	max         int
}

func decodeOne(ctx context.Context, fieldPath, secretDir string, p part) ([]byte, error) {
	n := 0
	for _, set := range []bool{p.raw != "", p.b64 != "", p.ref != nil} {
		if set {
			n++
		}
	}
	if n > 1 {
		return nil, sourceError(fieldPath, "", fmt.Errorf("%w: more than one of %s, %s, %s",
			ErrAmbiguous, p.rawKey, p.b64Key, p.refKey))
	}
	switch {
	case p.raw != "":
		if len(p.raw) > p.max {
			return nil, sourceError(fieldPath+"."+p.rawKey, "",
				fmt.Errorf("%w: %d bytes, limit %d; use %s", ErrTooLarge, len(p.raw), p.max, p.refKey))
		}
		return []byte(p.raw), nil
	case p.b64 != "":
		b, err := base64.StdEncoding.DecodeString(p.b64)
		if err != nil {
			return nil, sourceError(fieldPath+"."+p.b64Key, "", fmt.Errorf("%w: %w", ErrBadBase64, err))
		}
		if len(b) > p.max {
			return nil, sourceError(fieldPath+"."+p.b64Key, "",
				fmt.Errorf("%w: %d bytes decoded, limit %d; use %s", ErrTooLarge, len(b), p.max, p.refKey))
		}
		return b, nil
	case p.ref != nil:
		return readSecret(ctx, fieldPath+"."+p.refKey, secretDir, p.keys)
	}
	return nil, nil
}

// readSecret reads the first of keys present in dir.
func readSecret(ctx context.Context, fieldPath, dir string, keys []string) ([]byte, error) {
	if dir == "" {
		return nil, sourceError(fieldPath, "", fmt.Errorf("%w: no secret directory configured", ErrSecretMissing))
	}
	if _, err := os.Stat(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("%w: %w", ErrSecretMissing, err)
		}
		return nil, sourceError(fieldPath, dir, err)
	}
	for _, k := range keys {
		name := filepath.Join(dir, k)
		b, err := safefile.ReadIn(ctx, dir, k, MaxSecretData)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case errors.Is(err, safefile.ErrTooLarge):
			return nil, sourceError(fieldPath, name, fmt.Errorf("%w: over %d bytes", ErrTooLarge, MaxSecretData))
		case err != nil:
			return nil, sourceError(fieldPath, name, err)
		}
		return b, nil
	}
	return nil, sourceError(fieldPath, dir, fmt.Errorf("%w: no key %q or %q", ErrSecretMissing, keys[0], keys[1]))
}
