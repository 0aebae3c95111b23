package slirp

import (
	"context"
	"errors"

	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/internal/netdriver"
)

// NeedsRecord reports whether Render needs phase1's record.
func (Binding) NeedsRecord() bool { return true }

// Discover reads the pod link.
func (Binding) Discover(ctx context.Context, d netdriver.Driver, in binding.Input) (*cache.Link, error) {
	return nil, errors.New("slirp: phase1 not implemented yet")
}

// Plan computes the interface record.
func (Binding) Plan(in binding.Input, link *cache.Link) (*cache.Interface, error) {
	return nil, errors.New("slirp: phase1 not implemented yet")
}

// Prepare makes the namespace match the record.
func (Binding) Prepare(ctx context.Context, d netdriver.Driver, in binding.Input, link *cache.Link, rec *cache.Interface) error {
	return errors.New("slirp: phase1 not implemented yet")
}

// Cleanup undoes Prepare.
func (Binding) Cleanup(ctx context.Context, d netdriver.Driver, in binding.Input, link *cache.Link, rec *cache.Interface) error {
	return nil
}
