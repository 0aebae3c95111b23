//go:build linux

package intercept

import (
	"sync"
	"time"

	"github.com/virtnet/virtnet/netdriver"
)

// Call is one call through a [Driver], as its hooks see it.
type Call struct {
	// Method is the netdriver.Driver method ("AddBridge").
	Method string
	// Mutating is true for the calls that change the namespace.
	Mutating bool
	// Seq counts the calls of the same kind (mutating or not) through
	// this Driver, from 1.
	Seq int
}

// Driver wraps a [netdriver.Driver]: Before runs ahead of every call and
// can fail it (or kill the process, or delete the namespace); After sees
// each call's duration and error. It is safe for concurrent use if the
// hooks are.
type Driver struct {
	// Inner does the work.
	Inner netdriver.Driver
	// Before, when set, runs before each call; a non-nil error is
	// returned instead of calling Inner.
	Before func(Call) error
	// After, when set, runs after each call made to Inner.
	After func(c Call, took time.Duration, err error)

	mu             sync.Mutex
	reads, mutates int
}

var _ netdriver.Driver = (*Driver)(nil)

// Counts returns how many read-only and mutating calls went through.
func (d *Driver) Counts() (reads, mutating int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.reads, d.mutates
}

// call runs f between the hooks: Before can fail it in f's place, After
// sees its duration and error.
func (d *Driver) call(method string, mutating bool, f func() error) error {
	d.mu.Lock()
	c := Call{Method: method, Mutating: mutating}
	if mutating {
		d.mutates++
		c.Seq = d.mutates
	} else {
		d.reads++
		c.Seq = d.reads
	}
	d.mu.Unlock()
	if d.Before != nil {
		if err := d.Before(c); err != nil {
			return err
		}
	}
	start := time.Now()
	err := f()
	if d.After != nil {
		d.After(c, time.Since(start), err)
	}
	return err
}

func (d *Driver) mutate(method string, f func() error) error { return d.call(method, true, f) }

// read is call for a read-only method returning a value (the zero value
// when Before fails the call).
func read[T any](d *Driver, method string, f func() (T, error)) (T, error) {
	var v T
	err := d.call(method, false, func() (err error) {
		v, err = f()
		return err
	})
	return v, err
}
