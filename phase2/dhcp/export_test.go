package dhcp

import "time"

// withRAInterval sets the period of unsolicited router advertisements
// (default 60s), so that a test sees several in a second.
func withRAInterval(d time.Duration) Option { return func(s *Server) { s.raInterval = d } }

// withLogLimit sets the log limiter's burst and period (default 10 at
// once, one per 10s), so that a test can count what is left out.
func withLogLimit(burst int, every time.Duration) Option {
	return func(s *Server) { s.lim = newLimiter(burst, every) }
}
