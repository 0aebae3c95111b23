package cloudinit

import (
	"errors"
	"fmt"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/internal/safefile"
)

// Sentinels wrapped by [ErrBadSource] errors; match them with [errors.Is].
var (
	// ErrBadBase64 is a userDataBase64 or networkDataBase64 that is not
	// standard base64.
	ErrBadBase64 = errors.New("not valid base64")
	// ErrTooLarge is user or network data over its size limit
	// ([MaxInlineUserData], [MaxInlineNetworkData], [MaxSecretData]).
	ErrTooLarge = errors.New("data too large")
	// ErrNoData is a cloud-init source with neither user nor network data.
	ErrNoData = errors.New("neither user data nor network data")
	// ErrAmbiguous is a source given more than once (userData and
	// userDataBase64, or two volumes of the same cloud-init kind).
	ErrAmbiguous = errors.New("more than one source")
	// ErrSecretMissing is a secret or config map whose mounted directory or
	// key file does not exist (or no directory to look in was configured).
	ErrSecretMissing = errors.New("secret not mounted")
	// ErrNoUnattend is a sysprep directory holding neither autounattend.xml
	// nor unattend.xml.
	ErrNoUnattend = errors.New("neither autounattend.xml nor unattend.xml")
	// ErrNotRegular is a secret key or sysprep file that is not a regular
	// file (a FIFO, a socket, a device): refused without opening it for a
	// blocking read.
	ErrNotRegular = safefile.ErrNotRegular
)

// ErrBadSource is matched by the error of a cloud-init or sysprep source
// that cannot be turned into an image. The error names the field in
// KubeVirt's JSON spelling ("spec.volumes[2].cloudInitNoCloud.userDataBase64")
// and, when one was read, the mounted file or directory, and wraps the
// cause: one of the sentinels above (with the underlying error, where there
// is one) or an I/O error. It matches api.ErrInvalid too when the VMI itself
// is at fault, that is for every cause but [ErrSecretMissing] and
// [ErrNotRegular] (a mount the pod lacks or that holds something else than
// files).
var ErrBadSource = errors.New("bad source")

// sourceError is [ErrBadSource] for the field at path (and file, when set)
// because of err.
func sourceError(path, file string, err error) error {
	if file != "" {
		path += ": " + file
	}
	if errors.Is(err, ErrSecretMissing) || errors.Is(err, ErrNotRegular) {
		return fmt.Errorf("cloudinit: %w %s: %w", ErrBadSource, path, err)
	}
	return fmt.Errorf("cloudinit: %w %s: %w: %w", ErrBadSource, path, api.ErrInvalid, err)
}

// errUnsafeName is a namespace, name or volume name that cannot be one
// path element; api.Validate refuses such VMIs already.
var errUnsafeName = errors.New("name unusable in a file path")
