package nsexec

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// ErrClosed is returned by [Thread.Do] after [Thread.Close].
var ErrClosed = errors.New("nsexec: thread closed")

// Thread is one OS thread that entered a network namespace once and stays
// there: [Thread.Do] runs functions on it, one at a time, without the
// open, the two setns(2) calls and the thread hand-off that each [Do]
// costs (about 30 µs a call). A driver that reads and writes many
// /proc/sys/net files or runs ethtool ioctls in one namespace keeps one.
//
// The thread is never the process's main thread (see [goLocked]), and it
// is locked to its goroutine and never unlocked: when
// [Thread.Close] ends the goroutine, the Go runtime discards the thread
// instead of handing it, still in the namespace, to other goroutines; a
// thread the runtime starts later is cloned from its template thread, not
// from this one. Before it ends, the thread goes back to the namespace it
// came from: should the goroutine have run on the process's main thread,
// which the runtime cannot end and parks for good instead, that thread
// neither holds the pod's namespace alive nor makes /proc/self/ns/net name
// it.
type Thread struct {
	calls chan func()
	// mu guards closed against a send on calls after Close.
	mu     sync.RWMutex
	closed bool
}

// Start starts a thread in the network namespace at nsPath (a file such as
// /var/run/netns/NAME or /proc/PID/ns/net). Close it when done.
func Start(nsPath string) (*Thread, error) {
	f, err := os.Open(nsPath)
	if err != nil {
		return nil, fmt.Errorf("open network namespace %s: %w", nsPath, err)
	}
	defer f.Close()
	return StartFd(int(f.Fd()), nsPath)
}

// StartFd is [Start] with a file descriptor of the namespace, which the
// caller keeps (the thread does not need it once it has entered); name is
// for messages.
func StartFd(fd int, name string) (*Thread, error) {
	t := &Thread{calls: make(chan func())}
	errc := make(chan error, 1)
	goLocked(func() {
		// Never unlocked, even on failure: the thread ends with this
		// goroutine (after a failed setns its namespace is unknown).
		home, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			errc <- fmt.Errorf("open current network namespace: %w", err)
			return
		}
		defer home.Close()
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("enter network namespace %s: %w", name, err)
			return
		}
		// Best effort: the thread is discarded either way.
		defer func() { _ = unix.Setns(int(home.Fd()), unix.CLONE_NEWNET) }()
		errc <- nil
		for fn := range t.calls {
			fn()
		}
	})
	if err := <-errc; err != nil {
		return nil, err
	}
	return t, nil
}

// Do runs fn on the thread, inside its namespace, and returns fn's error;
// calls from several goroutines run one after the other. fn must not call
// Do or Close of the same thread.
func (t *Thread) Do(fn func() error) error {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.closed {
		return ErrClosed
	}
	errc := make(chan error, 1)
	t.calls <- func() { errc <- fn() }
	return <-errc
}

// Close ends the thread once the calls in progress are done; later calls
// of Do return [ErrClosed]. It is safe to call more than once.
func (t *Thread) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed {
		t.closed = true
		close(t.calls)
	}
}

// goLocked runs fn on a new goroutine locked to an OS thread that is not
// the process's main thread; fn may unlock it once. /proc/self/ns/net
// names the main thread's namespace, which other code in the process (a
// caller that opens /proc/self/ns/net as "here") takes for the process's
// own: a thread that enters a pod's namespace must never be the main
// thread. When the runtime starts the goroutine there, it keeps the main
// thread locked while a second goroutine, which then cannot run on it,
// locks its own thread for fn.
func goLocked(fn func()) {
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() != unix.Getpid() {
			fn()
			return
		}
		locked := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(locked)
			fn()
		}()
		<-locked
		runtime.UnlockOSThread()
	}()
}
