package agents

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cks-dev/cks"
)

// TestOutputStreamDropsWithANote: writes never wait; past the buffer's
// bound, and while the hub does not take them, bytes are dropped and
// counted, and the count goes first once a send succeeds again; a UTF-8
// sequence split between writes is sent whole; a lost lease ends the
// stream.
func TestOutputStreamDropsWithANote(t *testing.T) {
	var mu sync.Mutex
	var sent []string
	var down error
	o := newOutputStream(func(_ context.Context, stream, text string) error {
		mu.Lock()
		defer mu.Unlock()
		if down != nil {
			return down
		}
		sent = append(sent, stream+":"+text)
		return nil
	}, time.Hour, 100)
	out, errw := o.writer("stdout"), o.writer("stderr")
	write := func(w *streamWriter, s string) {
		t.Helper()
		if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("write = %d, %v", n, err)
		}
	}
	write(out, strings.Repeat("a", 60))
	write(errw, strings.Repeat("b", 30))
	write(out, strings.Repeat("c", 20)) // past 100: dropped
	mu.Lock()
	down = errors.New("hub unreachable")
	mu.Unlock()
	o.flush(context.Background(), false) // 90 buffered bytes lost too
	mu.Lock()
	down = nil
	mu.Unlock()
	write(out, "ok \xc3") // é cut in two
	o.flush(context.Background(), false)
	write(out, "\xa9\n")
	o.flush(context.Background(), false)
	want := []string{"cks:[110 bytes of output dropped: the hub did not take them in time]\n", "stdout:ok ", "stdout:é\n"}
	mu.Lock()
	got := sent
	mu.Unlock()
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("sent %q, want %q", got, want)
	}
	mu.Lock()
	down = cks.ErrLeaseLost
	mu.Unlock()
	write(out, "x")
	o.flush(context.Background(), false)
	mu.Lock()
	down = nil
	mu.Unlock()
	write(out, "after the lease")
	o.close()
	if len(sent) != len(want) {
		t.Fatalf("sent after the lease was lost: %q", sent[len(want):])
	}
}
