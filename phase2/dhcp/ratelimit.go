package dhcp

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"time"
)

// Default log limits: every distinct message (and level) gets logBurst
// lines at once, then one more per logEvery. A flooding client therefore
// costs a bounded number of lines, whatever it sends.
const (
	logBurst = 10
	logEvery = 10 * time.Second
	// maxLogKeys bounds the messages tracked one by one; past it, every
	// other message shares one budget.
	maxLogKeys = 128
)

// limiter is a token bucket per log message.
type limiter struct {
	burst int
	every time.Duration
	now   func() time.Time

	mu   sync.Mutex
	keys map[logKey]*bucket
}

type logKey struct {
	level slog.Level
	msg   string
}

type bucket struct {
	tokens  float64
	last    time.Time
	dropped int // since the last line of this message
}

func newLimiter(burst int, every time.Duration) *limiter {
	return &limiter{burst: max(burst, 1), every: every, now: time.Now, keys: map[logKey]*bucket{}}
}

// allow reports whether a line of msg at level may be written now and, if
// so, how many lines of it were suppressed since the previous one.
func (l *limiter) allow(level slog.Level, msg string) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	k := logKey{level, msg}
	b, ok := l.keys[k]
	if !ok {
		if len(l.keys) >= maxLogKeys {
			k = logKey{level, ""}
			b = l.keys[k]
		}
		if b == nil {
			b = &bucket{tokens: float64(l.burst), last: now}
			l.keys[k] = b
		}
	}
	if l.every > 0 {
		b.tokens += float64(now.Sub(b.last)) / float64(l.every)
		b.tokens = min(b.tokens, float64(l.burst))
	}
	b.last = now
	if b.tokens < 1 {
		b.dropped++
		return false, 0
	}
	b.tokens--
	n := b.dropped
	b.dropped = 0
	return true, n
}

// pending returns, per message, the lines suppressed since its last line,
// and resets the counts.
func (l *limiter) pending() []slog.Attr {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []slog.Attr
	for k, b := range l.keys {
		if b.dropped > 0 {
			out = append(out, slog.Int(k.msg, b.dropped))
			b.dropped = 0
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// limitHandler is a slog.Handler that drops the lines its limiter refuses
// and adds "suppressed=N" to the next line of a message that had some
// dropped.
type limitHandler struct {
	h   slog.Handler
	lim *limiter
}

func (h *limitHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.h.Enabled(ctx, level)
}

func (h *limitHandler) Handle(ctx context.Context, r slog.Record) error {
	ok, n := h.lim.allow(r.Level, r.Message)
	if !ok {
		return nil
	}
	if n > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int("suppressed", n))
	}
	return h.h.Handle(ctx, r)
}

func (h *limitHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &limitHandler{h: h.h.WithAttrs(as), lim: h.lim}
}

func (h *limitHandler) WithGroup(name string) slog.Handler {
	return &limitHandler{h: h.h.WithGroup(name), lim: h.lim}
}

// orDiscard returns log, or a logger that discards everything when log is
// nil.
func orDiscard(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return log
}

// limited returns log (nil: discard) behind a limiter with the default
// limits, unless it is limited already.
func limited(log *slog.Logger) *slog.Logger {
	log = orDiscard(log)
	if _, ok := log.Handler().(*limitHandler); ok {
		return log
	}
	return slog.New(&limitHandler{h: log.Handler(), lim: newLimiter(logBurst, logEvery)})
}
