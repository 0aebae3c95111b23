package slirp

import (
	"context"

	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/internal/netdriver"
)

// NeedsRecord is false: Render works from the VMI alone.
func (Binding) NeedsRecord() bool { return false }

// Discover does nothing: slirp needs nothing of the pod's links.
func (Binding) Discover(ctx context.Context, d netdriver.Driver, in binding.Input) (*cache.Link, error) {
	return nil, nil
}

// Plan returns a record naming only the interface and its binding.
func (Binding) Plan(in binding.Input, link *cache.Link) (*cache.Interface, error) {
	return &cache.Interface{
		Version:      cache.Version,
		Interface:    in.Pair.Interface.Name,
		PodInterface: in.Pair.PodInterface,
		Binding:      in.Pair.Binding(),
	}, nil
}

// Prepare does nothing.
func (Binding) Prepare(ctx context.Context, d netdriver.Driver, in binding.Input, link *cache.Link, rec *cache.Interface) error {
	return nil
}

// Cleanup does nothing.
func (Binding) Cleanup(ctx context.Context, d netdriver.Driver, in binding.Input, link *cache.Link, rec *cache.Interface) error {
	return nil
}
