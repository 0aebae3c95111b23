package cloudinit

import "context"

// Sysprep writes the "unattendCD" image of srcDir at isoPath, as
// [Builder.Build] does for a sysprep volume (see readSysprep).
func Sysprep(ctx context.Context, isoPath, srcDir, fieldPath string) error {
	files, err := readSysprep(ctx, srcDir, fieldPath)
	if err != nil {
		return err
	}
	return writeISO(ctx, isoPath, SysprepLabel, files)
}
