package kvplugin

import (
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/internal/names"
)

// TapOf is the link that carries the hand-off record of a pod interface:
// the tap phase1 made for it ("tap0" when primary, see [names.Tap]).
func TapOf(podIface string, primary bool) string { return names.Tap(podIface, primary) }

// RecordSource is a decoded record and the link it was read from.
type RecordSource struct {
	Link   string
	Record *cache.Interface
}
