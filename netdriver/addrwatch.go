package netdriver

// AddrWatcher is an optional interface of a [Driver]: the kernel tells it
// when the addresses of a link change (a new address, one removed, or
// its flags changed, as when duplicate address detection ends), so that
// a caller waiting for such a change needs no polling.
type AddrWatcher interface {
	// WatchAddrs starts watching the addresses of the link named link.
	// changes receives a value after one or more changes (coalesced:
	// the caller lists the addresses again); it is closed when the
	// notifications stop early (the kernel dropped some: the caller
	// falls back to polling). stop ends the watch and must be called
	// once. A caller lists the addresses after WatchAddrs returns, so
	// that no change between its list and the watch is missed.
	WatchAddrs(link string) (changes <-chan struct{}, stop func(), err error)
}
