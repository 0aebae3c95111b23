package phase2_test

import (
	"os"

	"github.com/virtnet/virtnet/domxml"
)

func domxmlOptionsBlock(vols ...string) domxml.Options {
	o := domxml.Options{BlockVolumes: map[string]bool{}}
	for _, v := range vols {
		o.BlockVolumes[v] = true
	}
	return o
}

func writeFile(path, data string) error { return os.WriteFile(path, []byte(data), 0o644) }
