package kernel

import (
	"fmt"

	"github.com/vishvananda/netlink"

	"github.com/virtnet/virtnet/netdriver"
)

var _ netdriver.AddrWatcher = (*Netlink)(nil)

// subscribe runs sub on the namespace's thread, so that its netlink
// socket belongs to the namespace, with a done channel and an error
// callback that only ends the subscription (its channel closes). The
// returned stop closes the socket and drains ch until the library's
// receiving goroutine has closed it.
func subscribe[T any](n *Netlink, ch chan T, sub func(ch chan<- T, done <-chan struct{}) error) (stop func(), err error) {
	done := make(chan struct{})
	if err := n.thr.Do(func() error { return sub(ch, done) }); err != nil {
		// The library closes ch only once its goroutine runs; it may
		// not have started.
		close(done)
		return nil, err
	}
	return func() {
		close(done)
		for range ch {
		}
	}, nil
}

// WatchAddrs implements [netdriver.AddrWatcher] with a netlink
// subscription (RTNLGRP_IPV4_IFADDR and RTNLGRP_IPV6_IFADDR) opened in
// the namespace; updates of other links are skipped.
func (n *Netlink) WatchAddrs(name string) (<-chan struct{}, func(), error) {
	l, _, err := n.ref(name)
	if err != nil {
		return nil, nil, err
	}
	idx := l.Attrs().Index
	ups := make(chan netlink.AddrUpdate, 16)
	stopSub, err := subscribe(n, ups, func(ch chan<- netlink.AddrUpdate, done <-chan struct{}) error {
		return netlink.AddrSubscribeWithOptions(ch, done, netlink.AddrSubscribeOptions{ErrorCallback: func(error) {}})
	})
	if err != nil {
		return nil, nil, fmt.Errorf("watch the addresses of %q: %w", name, err)
	}
	changes := make(chan struct{}, 1)
	quit, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		defer close(changes)
		for {
			select {
			case <-quit:
				return
			case u, ok := <-ups:
				if !ok {
					return
				}
				if u.LinkIndex != idx {
					continue
				}
				select {
				case changes <- struct{}{}:
				default:
				}
			}
		}
	}()
	return changes, func() {
		close(quit)
		<-finished
		stopSub()
	}, nil
}
