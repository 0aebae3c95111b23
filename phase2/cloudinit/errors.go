package cloudinit

import (
	"errors"
	"fmt"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/internal/safefile"
)

// Sentinels wrapped by [*SourceError]; match them with [errors.Is].
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

// SourceError is a cloud-init or sysprep source that cannot be turned into
// an image. Path is the field in KubeVirt's JSON spelling
// ("spec.volumes[2].cloudInitNoCloud.userDataBase64"); File, when set, is
// the mounted file or directory that was read. Err wraps one of the
// sentinels of this package and, where there is one, the underlying error.
type SourceError struct {
	Path string
	File string
	Err  error
}

func (e *SourceError) Error() string {
	if e.File != "" {
		return fmt.Sprintf("cloudinit: %s: %s: %v", e.Path, e.File, e.Err)
	}
	return fmt.Sprintf("cloudinit: %s: %v", e.Path, e.Err)
}

// Unwrap returns the wrapped sentinel (and cause).
func (e *SourceError) Unwrap() error { return e.Err }

// Is makes a SourceError match api.ErrInvalid when the VMI itself is at
// fault, that is for every sentinel but [ErrSecretMissing] and
// [ErrNotRegular] (a mount the pod lacks or that holds something else
// than files).
func (e *SourceError) Is(target error) bool {
	return target == api.ErrInvalid && !errors.Is(e.Err, ErrSecretMissing) && !errors.Is(e.Err, ErrNotRegular)
}

// errUnsafeName is a namespace, name or volume name that cannot be one
// path element; api.Validate refuses such VMIs already.
var errUnsafeName = errors.New("name unusable in a file path")
