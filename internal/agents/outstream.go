package agents

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/runtime/worker"
)

// Live output of exec agents (issue 43 item 3): what the command writes to
// stdout and stderr goes, besides the capped copies the result and the
// failure keep, to an outputStream, which sends it to the attempt's live
// output (append_output) while the command runs. Writing never blocks the
// command: a write only copies into a bounded buffer, a flusher sends what
// is buffered every FlushInterval or once FlushSize bytes wait, and what
// does not fit — the hub unreachable, or slower than the command — is
// dropped and counted, the count sent as a note (stream "cks") once a send
// succeeds again.
const (
	// DefaultOutputFlush is how often buffered output is sent.
	DefaultOutputFlush = 200 * time.Millisecond
	// outputFlushSize is how much buffered output sends at once, without
	// waiting for the interval.
	outputFlushSize = 32 << 10
	// DefaultOutputBuffer bounds the output buffered and not yet sent.
	DefaultOutputBuffer = 1 << 20
	// outputCloseWait bounds the last flush once the command ended.
	outputCloseWait = 10 * time.Second
)

// outputSender sends one chunk of live output (worker.Attempt.Output).
type outputSender func(ctx context.Context, stream, text string) error

// outputStream buffers a command's output and sends it in chunks.
type outputStream struct {
	send   outputSender
	every  time.Duration
	max    int
	mu     sync.Mutex
	segs   []segment // buffered, in the order written
	size   int       // bytes in segs
	lost   int64     // bytes dropped and not yet told
	dead   bool      // the lease is gone: drop everything
	kick   chan struct{}
	closed chan struct{}
	done   chan struct{}
}

// segment is buffered output of one stream.
type segment struct {
	stream string
	b      []byte
}

// newOutputStream starts the flusher of a stream that sends with send.
func newOutputStream(send outputSender, every time.Duration, max int) *outputStream {
	if every <= 0 {
		every = DefaultOutputFlush
	}
	if max <= 0 {
		max = DefaultOutputBuffer
	}
	o := &outputStream{send: send, every: every, max: max, kick: make(chan struct{}, 1),
		closed: make(chan struct{}), done: make(chan struct{})}
	go o.run()
	return o
}

// writer is the io.Writer of one stream of the command.
func (o *outputStream) writer(stream string) *streamWriter {
	return &streamWriter{o: o, stream: stream}
}

// streamWriter writes to its stream's buffer.
type streamWriter struct {
	o      *outputStream
	stream string
}

// Write buffers p, or counts it dropped when the buffer is full; it never
// waits for a send and never fails (the command's output is its own).
func (w *streamWriter) Write(p []byte) (int, error) {
	o := w.o
	o.mu.Lock()
	switch {
	case o.dead:
	case o.size+len(p) > o.max:
		o.lost += int64(len(p))
	default:
		if n := len(o.segs); n > 0 && o.segs[n-1].stream == w.stream {
			o.segs[n-1].b = append(o.segs[n-1].b, p...)
		} else {
			o.segs = append(o.segs, segment{stream: w.stream, b: append([]byte(nil), p...)})
		}
		o.size += len(p)
	}
	full := o.size >= outputFlushSize
	o.mu.Unlock()
	if full {
		select {
		case o.kick <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

// run flushes every interval, on a kick, and once more at close.
func (o *outputStream) run() {
	defer close(o.done)
	t := time.NewTicker(o.every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-o.kick:
		case <-o.closed:
			ctx, cancel := context.WithTimeout(context.Background(), outputCloseWait)
			o.flush(ctx, true)
			cancel()
			return
		}
		o.flush(context.Background(), false)
	}
}

// flush sends what is buffered, in chunks of at most cks.MaxOutputChunk
// bytes cut at rune boundaries (an incomplete rune at a stream's end waits
// for its rest unless last), the note of lost bytes first. A chunk that
// fails is counted lost; a lost lease ends the stream.
func (o *outputStream) flush(ctx context.Context, last bool) {
	o.mu.Lock()
	segs, lost := o.segs, o.lost
	o.segs, o.size, o.lost = nil, 0, 0
	if o.dead {
		o.mu.Unlock()
		return
	}
	var keep []segment
	if !last && len(segs) > 0 {
		// An incomplete UTF-8 sequence at the end waits for its rest.
		s := &segs[len(segs)-1]
		if cut := incompleteTail(s.b); cut > 0 {
			keep = []segment{{stream: s.stream, b: append([]byte(nil), s.b[len(s.b)-cut:]...)}}
			s.b = s.b[:len(s.b)-cut]
		}
	}
	o.segs = keep
	for _, k := range keep {
		o.size += len(k.b)
	}
	o.mu.Unlock()
	fail := func(n int) {
		o.mu.Lock()
		o.lost += int64(n)
		o.mu.Unlock()
	}
	if lost > 0 {
		if err := o.send(ctx, "cks", fmt.Sprintf("[%d bytes of output dropped: the hub did not take them in time]\n", lost)); err != nil {
			o.failed(err)
			fail(int(lost))
			for _, s := range segs {
				fail(len(s.b))
			}
			return
		}
	}
	for i, s := range segs {
		for b := s.b; len(b) > 0; {
			n := min(len(b), cks.MaxOutputChunk)
			for n < len(b) && n > 0 && !utf8.RuneStart(b[n]) {
				n--
			}
			if n == 0 {
				n = min(len(b), cks.MaxOutputChunk)
			}
			text := cks.ToText(string(b[:n]))
			for len(text) > cks.MaxOutputChunk { // U+FFFD for each bad byte: three for one
				n /= 2
				text = cks.ToText(string(b[:n]))
			}
			if err := o.send(ctx, s.stream, text); err != nil {
				o.failed(err)
				rest := len(b)
				for _, r := range segs[i+1:] {
					rest += len(r.b)
				}
				fail(rest)
				return
			}
			b = b[n:]
		}
	}
}

// failed ends the stream when err says no later send can succeed: the
// lease is gone, or the store keeps no output.
func (o *outputStream) failed(err error) {
	if errors.Is(err, cks.ErrLeaseLost) || errors.Is(err, worker.ErrNoOutput) || errors.Is(err, cks.ErrNotFound) {
		o.mu.Lock()
		o.dead, o.segs, o.size = true, nil, 0
		o.mu.Unlock()
	}
}

// incompleteTail returns how many bytes at the end of b begin a UTF-8
// sequence that b does not finish (0: none).
func incompleteTail(b []byte) int {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		c := b[len(b)-i]
		if utf8.RuneStart(c) {
			if c >= utf8.RuneSelf && !utf8.FullRune(b[len(b)-i:]) {
				return i
			}
			return 0
		}
	}
	return 0
}

// close sends what is left (within outputCloseWait) and stops the flusher.
func (o *outputStream) close() {
	close(o.closed)
	<-o.done
}
