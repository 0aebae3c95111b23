package safefile

import (
	"fmt"
	"os"
)

// Stage is a point inside [Replace], in order.
type Stage int

// The stages of a [Replace].
const (
	// Created: the temporary file exists, empty.
	Created Stage = iota
	// Written: write has filled it.
	Written
	// Synced: it is fsynced and closed.
	Synced
	// Renamed: it has replaced the target.
	Renamed
)

// Replace is the module's one atomic file writer: write fills tmp (a new
// file the caller created in target's directory), which is fsynced,
// closed and renamed over target, so that a reader sees target absent, old
// or new, never torn, even after a SIGKILL or a crash. step, when not nil,
// runs after each [Stage] (crash tests stop a write there; an error fails
// it). On any error tmp is closed and removed and target is left as it
// was. The directory is not synced: a caller that needs the rename to be
// durable syncs it (the cache does once for many records).
func Replace(tmp *os.File, target string, write func(*os.File) error, step func(Stage) error) (err error) {
	defer func() {
		if err != nil {
			_ = tmp.Close() // a second Close is harmless
			_ = os.Remove(tmp.Name())
		}
	}()
	if step == nil {
		step = func(Stage) error { return nil }
	}
	if err := step(Created); err != nil {
		return err
	}
	if err := write(tmp); err != nil {
		return err
	}
	if err := step(Written); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	if err := step(Synced); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return err
	}
	return step(Renamed)
}
