package phase2_test

import (
	"context"
	"os"

	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/domxml"
	"github.com/virtnet/virtnet/phase2"
)

// enrich adds the network devices of vmi to dom: ReadRecords then Render,
// as prestart's network step.
func enrich(ctx context.Context, vmi *api.VMI, store *cache.Store, dom *libvirtxml.Domain, opts binding.RenderOptions) error {
	items, err := phase2.ReadRecords(ctx, vmi, store, phase2.Options{})
	if err != nil {
		return err
	}
	return phase2.Render(vmi, items, dom, opts)
}

func domxmlOptionsBlock(vols ...string) domxml.Options {
	o := domxml.Options{BlockVolumes: map[string]bool{}}
	for _, v := range vols {
		o.BlockVolumes[v] = true
	}
	return o
}

func writeFile(path, data string) error { return os.WriteFile(path, []byte(data), 0o644) }
