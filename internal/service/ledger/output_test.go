package ledger_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/waitfor"
)

// texts is the text of chunks, notes as "[N dropped]".
func texts(cs []cks.OutputChunk) string {
	var b strings.Builder
	for _, c := range cs {
		if c.Dropped > 0 {
			b.WriteString("[" + strconv.FormatInt(c.Dropped, 10) + " dropped]")
			continue
		}
		b.WriteString(c.Text)
	}
	return b.String()
}

// TestAppendOutput (both backends): the lease holder's chunks are kept in
// order with their attempt and seq, paged by after and limit; a stale
// holder, an unknown task, a chunk past 64 KiB and a bad stream label are
// refused naming what is wrong, and keep nothing.
func TestAppendOutput(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s := open(t).Tasks
		ctx := context.Background()
		if _, _, err := s.Enqueue(ctx, cks.NewTask{Type: "out"}); err != nil {
			t.Fatal(err)
		}
		c, err := s.Claim(ctx, ledger.ClaimParams{Worker: "w", Types: []string{"out"}, N: 1, Lease: time.Minute})
		if err != nil || len(c) != 1 {
			t.Fatalf("claim = %v, %v", c, err)
		}
		id, tok := c[0].ID, c[0].LeaseToken
		for i, chunk := range []string{"one\n", "two\n", "three\n"} {
			got, err := s.AppendOutput(ctx, id, tok, "stdout", chunk)
			if err != nil || got.Seq != int64(i+1) || got.Attempt != 1 {
				t.Fatalf("append %q = %+v, %v", chunk, got, err)
			}
		}
		page, err := s.Output(ctx, id, 0, 2)
		if err != nil || texts(page.Chunks) != "one\ntwo\n" || !page.More || page.NextAfter != 2 || !page.Live || page.Attempt != 1 {
			t.Fatalf("first page = %+v, %v", page, err)
		}
		page, err = s.Output(ctx, id, page.NextAfter, 0)
		if err != nil || texts(page.Chunks) != "three\n" || page.More || page.NextAfter != 3 || page.Chunks[0].Offset != 8 || page.Chunks[0].Stream != "stdout" {
			t.Fatalf("second page = %+v, %v", page, err)
		}
		refused := []struct {
			name  string
			p     ledger.AppendOutputParams
			field string
			is    error
		}{
			{"a chunk past 64 KiB", ledger.AppendOutputParams{ID: id, Token: tok, Text: strings.Repeat("a", cks.MaxOutputChunk+1)}, "text", cks.ErrInvalid},
			{"a stream label with a space", ledger.AppendOutputParams{ID: id, Token: tok, Stream: "std out", Text: "x"}, "stream", cks.ErrInvalid},
			{"invalid UTF-8", ledger.AppendOutputParams{ID: id, Token: tok, Text: "\xff"}, "text", cks.ErrInvalid},
			{"a stale lease", ledger.AppendOutputParams{ID: id, Token: "not-the-lease", Text: "x"}, "", cks.ErrLeaseLost},
			{"an unknown task", ledger.AppendOutputParams{ID: id + 1000, Token: tok, Text: "x"}, "", cks.ErrNotFound},
		}
		for _, r := range refused {
			_, err := s.AppendOutput(ctx, r.p.ID, r.p.Token, r.p.Stream, r.p.Text)
			var fe *cks.FieldError
			if !errors.Is(err, r.is) || (r.field != "" && (!errors.As(err, &fe) || fe.Field != r.field)) {
				t.Errorf("%s: err = %v, want %v naming %q", r.name, err, r.is, r.field)
			}
		}
		if _, err := s.Output(ctx, id, -1, 0); !isField(err, "after") {
			t.Errorf("after -1: %v", err)
		}
		if _, err := s.Output(ctx, id, 0, cks.MaxOutputPage+1); !isField(err, "limit") {
			t.Errorf("limit past the bound: %v", err)
		}
		if _, err := s.Output(ctx, id+1000, 0, 0); !errors.Is(err, cks.ErrNotFound) {
			t.Errorf("output of an unknown task: %v", err)
		}
		// Completed, the holder's lease no longer appends.
		if _, err := s.Complete(ctx, id, tok, false, "done"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendOutput(ctx, id, tok, "", "late"); !errors.Is(err, cks.ErrLeaseLost) {
			t.Errorf("append after complete: %v", err)
		}
		page, err = s.Output(ctx, id, 0, 0)
		if err != nil || texts(page.Chunks) != "one\ntwo\nthree\n" || page.Live || page.State != cks.TaskCompleted {
			t.Fatalf("output after the refusals = %+v, %v", page, err)
		}
	})
}

func isField(err error, field string) bool {
	var fe *cks.FieldError
	return errors.As(err, &fe) && fe.Field == field
}

// TestOutputTail (both backends): past its bound an attempt keeps its
// newest chunks within it, and a note at the seq of the newest dropped
// tells a reader from the start how many bytes are gone — a reader past
// that seq sees no note; the next attempt starts with a tail of its own.
func TestOutputTail(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s := open(t).Tasks
		ledger.SetOutputTail(s, 25)
		ctx := context.Background()
		if _, _, err := s.Enqueue(ctx, cks.NewTask{Type: "tail"}); err != nil {
			t.Fatal(err)
		}
		c, err := s.Claim(ctx, ledger.ClaimParams{Worker: "w", Types: []string{"tail"}, N: 1, Lease: time.Minute})
		if err != nil || len(c) != 1 {
			t.Fatalf("claim = %v, %v", c, err)
		}
		id, tok := c[0].ID, c[0].LeaseToken
		var dropped []int64
		for _, chunk := range []string{"aaaaaaaaa\n", "bbbbbbbbb\n", "ccccccccc\n", "ddddddddd\n", "eeeeeeeee\n"} {
			got, err := s.AppendOutput(ctx, id, tok, "", chunk)
			if err != nil {
				t.Fatal(err)
			}
			dropped = append(dropped, got.Dropped)
		}
		// 50 bytes in 10-byte chunks under a 25-byte bound: a, b and c
		// go (30 bytes), d and e stay.
		if want := []int64{0, 0, 10, 20, 30}; !equalInts(dropped, want) {
			t.Errorf("dropped per append = %v, want %v", dropped, want)
		}
		page, err := s.Output(ctx, id, 0, 0)
		if err != nil || texts(page.Chunks) != "[30 dropped]ddddddddd\neeeeeeeee\n" {
			t.Fatalf("output from the start = %q, %v", texts(page.Chunks), err)
		}
		if note := page.Chunks[0]; note.Seq != 3 || note.Offset != 30 || page.Chunks[1].Offset != 30 {
			t.Errorf("note %+v, first chunk %+v", note, page.Chunks[1])
		}
		// A follower that read up to c missed nothing: no note.
		if page, err = s.Output(ctx, id, 3, 0); err != nil || texts(page.Chunks) != "ddddddddd\neeeeeeeee\n" {
			t.Errorf("output after seq 3 = %q, %v", texts(page.Chunks), err)
		}
		// A follower that read a only sees the note, then d.
		if page, err = s.Output(ctx, id, 1, 0); err != nil || texts(page.Chunks) != "[30 dropped]ddddddddd\neeeeeeeee\n" {
			t.Errorf("output after seq 1 = %q, %v", texts(page.Chunks), err)
		}
	})
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestFollowOutput (both backends): a follower started before the task
// is claimed receives every chunk of its attempt in order as they are
// appended (woken by the feed), and its follow ends, answering the task's
// state, when the attempt completes; a follower of a resting task ends at
// once with what there is.
func TestFollowOutput(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s := open(t).Tasks
		ctx := backendtest.Ctx(t)
		task, _, err := s.Enqueue(ctx, cks.NewTask{Type: "follow"})
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan cks.OutputChunk, 100)
		type end struct {
			page cks.OutputPage
			err  error
		}
		done := make(chan end, 1)
		go func() {
			last, err := s.FollowOutput(ctx, task.ID, 0, func(p cks.OutputPage) error {
				for _, c := range p.Chunks {
					got <- c
				}
				return nil
			})
			done <- end{last, err}
		}()
		c, err := s.Claim(ctx, ledger.ClaimParams{Worker: "w", Types: []string{"follow"}, N: 1, Lease: time.Minute})
		if err != nil || len(c) != 1 {
			t.Fatalf("claim = %v, %v", c, err)
		}
		for i := range 5 {
			text := strconv.Itoa(i) + "\n"
			if _, err := s.AppendOutput(ctx, task.ID, c[0].LeaseToken, "stdout", text); err != nil {
				t.Fatal(err)
			}
			// Each chunk arrives while the attempt runs, before the next.
			select {
			case ch := <-got:
				if ch.Text != text || ch.Seq != int64(i+1) {
					t.Fatalf("chunk %d = %+v, want %q", i, ch, text)
				}
			case <-time.After(waitfor.Limit):
				t.Fatalf("chunk %d never reached the follower", i)
			}
		}
		select {
		case e := <-done:
			t.Fatalf("the follow ended while the attempt ran: %+v", e)
		default:
		}
		if _, err := s.Complete(ctx, task.ID, c[0].LeaseToken, false, "done"); err != nil {
			t.Fatal(err)
		}
		select {
		case e := <-done:
			if e.err != nil || e.page.State != cks.TaskCompleted || len(e.page.Chunks) != 0 {
				t.Fatalf("follow ended with %+v, %v", e.page, e.err)
			}
		case <-time.After(waitfor.Limit):
			t.Fatal("the follow did not end with the attempt")
		}
		// A resting task: the follow sends what there is and ends.
		n := 0
		last, err := s.FollowOutput(ctx, task.ID, 2, func(p cks.OutputPage) error { n += len(p.Chunks); return nil })
		if err != nil || n != 3 || last.State != cks.TaskCompleted {
			t.Fatalf("follow of a completed task: %d chunks, %+v, %v", n, last, err)
		}
	})
}
