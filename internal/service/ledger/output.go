package ledger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
)

// Live output (issue 43 item 3): the chunks an executor appends under its
// lease, kept with their attempt in cks_task_output, each attempt's tail
// bounded (OutputTail); read by a seq cursor (Output) or followed
// (FollowOutput), the followers of a process woken by one feed.

// AppendOutputParams is one append_output.
type AppendOutputParams struct {
	ID     int64
	Token  string
	Stream string
	Text   string
}

// checkAppendOutput is append_output's rule of its input, judged before
// anything is read: a stream label (cks.ValidateOutputStream) and text of
// at most cks.MaxOutputChunk bytes of UTF-8 (the text field's bound).
func checkAppendOutput(p AppendOutputParams) error {
	if err := cks.ValidateOutputStream(p.Stream); err != nil {
		return err
	}
	return cks.ValidateText("text", p.Text)
}

func (s *Service) tail() int64 {
	if s.outputTail <= 0 {
		return cks.DefaultOutputTail
	}
	return s.outputTail
}

// AppendOutput appends a chunk to the output of the attempt p.Token
// leases (fenced like Heartbeat: a stale holder gets cks.ErrLeaseLost and
// nothing is kept). When the attempt's output passes its tail bound, its
// oldest chunks are deleted in the same transaction and a note at the seq
// of the newest deleted says how many bytes are gone. It publishes
// cks.TopicTaskOutput.
func (s *Service) AppendOutput(ctx context.Context, id int64, token, stream, text string) (cks.OutputAppended, error) {
	p := AppendOutputParams{ID: id, Token: token, Stream: stream, Text: text}
	if err := checkAppendOutput(p); err != nil {
		return cks.OutputAppended{}, err
	}
	tail := s.tail()
	var out cks.OutputAppended
	err := s.write(ctx, func(ctx context.Context, ex driver.Executor, now time.Time) error {
		cur, err := leased(ctx, ex, now, p.ID, p.Token, executing...)
		if err != nil {
			return err
		}
		row, err := ex.OutputAppend(ctx, driver.OutputRow{TaskID: cur.ID, Attempt: cur.Attempts, Restart: cur.Restarts,
			Stream: p.Stream, Body: p.Text, Size: len(p.Text), CreatedAt: now})
		if err != nil {
			return err
		}
		out = cks.OutputAppended{Seq: row.Seq, Attempt: row.Attempt, Offset: row.ByteOffset}
		if end := row.ByteOffset + int64(row.Size); end > tail {
			if out.Dropped, err = trimOutput(ctx, ex, now, row, end-tail); err != nil {
				return err
			}
		}
		return ex.Notify(ctx, cks.TopicTaskOutput)
	})
	return out, err
}

// trimOutput deletes the chunks of row's attempt that start before cut
// (never row itself) and writes the note of the bytes dropped so far at
// the seq of the newest it deleted; it returns that count (0: nothing
// deleted).
func trimOutput(ctx context.Context, ex driver.Executor, now time.Time, row driver.OutputRow, cut int64) (int64, error) {
	gone, err := ex.OutputTrim(ctx, driver.OutputTrimParams{TaskID: row.TaskID, Attempt: row.Attempt, Restart: row.Restart,
		Cut: cut, Before: row.Seq})
	if err != nil || len(gone) == 0 {
		return 0, err
	}
	var seq, dropped int64
	for _, g := range gone {
		// The chunks deleted are the attempt's oldest: dropped is where
		// the newest of them ended (a note's offset is its count).
		seq, dropped = max(seq, g.Seq), max(dropped, g.ByteOffset+int64(g.Size))
	}
	return dropped, ex.OutputNote(ctx, driver.OutputRow{TaskID: row.TaskID, Seq: seq, Attempt: row.Attempt, Restart: row.Restart,
		ByteOffset: dropped, Dropped: dropped, CreatedAt: now})
}

// checkOutputPage refuses a negative after and a limit outside
// 0..cks.MaxOutputPage (0: cks.DefaultOutputPage), naming the field.
func checkOutputPage(after int64, limit int) error {
	if after < 0 {
		return &cks.FieldError{Field: "after", Expected: "a seq of 0 or more (the next_after of the previous page)"}
	}
	if limit < 0 || limit > cks.MaxOutputPage {
		return &cks.FieldError{Field: "limit", Expected: fmt.Sprintf("1 to %d (0 is the default, %d)", cks.MaxOutputPage, cks.DefaultOutputPage)}
	}
	return nil
}

// Output reads up to limit chunks of task id's output after seq after
// (notes of dropped bytes among them), with the task's state, in one
// snapshot.
func (s *Service) Output(ctx context.Context, id, after int64, limit int) (cks.OutputPage, error) {
	if err := checkOutputPage(after, limit); err != nil {
		return cks.OutputPage{}, err
	}
	if limit == 0 {
		limit = cks.DefaultOutputPage
	}
	var page cks.OutputPage
	err := s.read(ctx, func(ctx context.Context, ex driver.Executor) error {
		cur, err := getRow(ctx, ex, id, driver.LockNone)
		if err != nil {
			return err
		}
		rows, err := ex.OutputList(ctx, driver.OutputListParams{TaskID: id, After: after, Limit: limit + 1})
		if err != nil {
			return err
		}
		page = outputPage(cur, rows, after, limit)
		return nil
	})
	return page, err
}

// outputPage is the page of rows (up to limit+1 read) of task cur after
// seq after.
func outputPage(cur driver.TaskRow, rows []driver.OutputRow, after int64, limit int) cks.OutputPage {
	st := cks.TaskState(cur.State)
	page := cks.OutputPage{Chunks: make([]cks.OutputChunk, 0, min(len(rows), limit)), NextAfter: after, State: st,
		Attempt: cur.Attempts, Live: st == cks.TaskClaimed || st == cks.TaskRunning}
	if len(rows) > limit {
		rows, page.More = rows[:limit], true
	}
	for _, r := range rows {
		page.Chunks = append(page.Chunks, cks.OutputChunk{Seq: r.Seq, Attempt: r.Attempt, Restart: r.Restart, Stream: r.Stream,
			Text: r.Body, Offset: r.ByteOffset, Dropped: r.Dropped, At: r.CreatedAt})
		page.NextAfter = r.Seq
	}
	return page
}

// FollowPage is how many chunks a follower reads at a time: with chunks
// of at most cks.MaxOutputChunk bytes, a follower holds at most 1 MiB of
// output at once whatever the attempt printed.
const FollowPage = 16

// ErrNoFeed is FollowOutput's error in a service without change
// notifications (NewService's changes nil).
var ErrNoFeed = errors.New("ledger: no change notifications to follow output with")

// FollowOutput calls send with each page of task id's output after seq
// after, as it is appended, until the attempt it follows ends — the one
// executing when it starts, or, for a task waiting to run (OPEN, WAITING,
// BLOCKED), its next — and returns the task's last page read (its state,
// no chunks left); or until ctx ends (ctx's error) or send fails (its
// error). A task resting in any other state ends the follow once its
// output is sent. The followers of this process are woken by one feed
// (outputFeed): one notification listener, one read of the followed
// tasks' heads per wake, never a read per follower unless it has news.
func (s *Service) FollowOutput(ctx context.Context, id, after int64, send func(cks.OutputPage) error) (cks.OutputPage, error) {
	if err := checkOutputPage(after, 0); err != nil {
		return cks.OutputPage{}, err
	}
	if s.changes == nil {
		return cks.OutputPage{}, ErrNoFeed
	}
	wake, leave := s.feed.join(s, id)
	defer leave()
	following := -1
	for {
		page, err := s.Output(ctx, id, after, FollowPage)
		if err != nil {
			return page, err
		}
		if len(page.Chunks) > 0 {
			if err := send(page); err != nil {
				return page, err
			}
			after = page.NextAfter
			if page.More {
				continue
			}
		}
		switch {
		case page.Live && following < 0:
			following = page.Attempt
		case page.Live && page.Attempt == following:
		case following < 0 && waitsToRun(page.State):
		default:
			page.Chunks = nil
			return page, nil
		}
		select {
		case <-ctx.Done():
			return page, ctx.Err()
		case <-wake:
		}
	}
}

// WatchOutput calls f each time task id's output may have changed — a
// chunk appended, or the task's state or attempt changed — until ctx ends
// (then it returns nil). Its wakes come from the process's one feed, as
// FollowOutput's do; f reads what it needs itself.
func (s *Service) WatchOutput(ctx context.Context, id int64, f func()) error {
	if s.changes == nil {
		return ErrNoFeed
	}
	wake, leave := s.feed.join(s, id)
	defer leave()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
			f()
		}
	}
}

// waitsToRun reports whether a task in state st has not started its next
// attempt yet but may.
func waitsToRun(st cks.TaskState) bool {
	return st == cks.TaskOpen || st == cks.TaskWaiting || st == cks.TaskBlocked
}

// outputFeed wakes the followers of this process (FollowOutput): while it
// has any, one WatchChanges of cks.TopicTaskOutput and cks.TopicTasksMoved
// runs; at each output change it reads the newest seq of every followed
// task in one statement (OutputHeads) and wakes the followers of those
// that moved on, at each move the followed tasks' rows in one statement
// and wakes those whose state or attempt changed.
type outputFeed struct {
	mu    sync.Mutex
	subs  map[int64]map[chan struct{}]struct{}
	heads map[int64]int64
	marks map[int64]string // task → state and attempt, as last read
	stop  context.CancelFunc
}

// join makes a follower of task id: wake is signalled (capacity 1) when
// the task may have news; leave ends it.
func (f *outputFeed) join(s *Service, id int64) (wake chan struct{}, leave func()) {
	wake = make(chan struct{}, 1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.subs == nil {
		f.subs, f.heads, f.marks = map[int64]map[chan struct{}]struct{}{}, map[int64]int64{}, map[int64]string{}
	}
	if f.subs[id] == nil {
		f.subs[id] = map[chan struct{}]struct{}{}
	}
	f.subs[id][wake] = struct{}{}
	if f.stop == nil {
		ctx, stop := context.WithCancel(context.Background())
		f.stop = stop
		go s.changes.WatchChanges(ctx, []string{cks.TopicTaskOutput, cks.TopicTasksMoved}, func(topic string) { //nolint:errcheck // returns nil when ctx ends
			f.changed(ctx, s, topic)
		})
	}
	return wake, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.subs[id], wake)
		if len(f.subs[id]) == 0 {
			delete(f.subs, id)
			delete(f.heads, id)
			delete(f.marks, id)
		}
		if len(f.subs) == 0 && f.stop != nil {
			f.stop()
			f.stop = nil
		}
	}
}

// changed wakes the followers of the tasks topic may have changed.
func (f *outputFeed) changed(ctx context.Context, s *Service, topic string) {
	f.mu.Lock()
	ids := make([]int64, 0, len(f.subs))
	for id := range f.subs {
		ids = append(ids, id)
	}
	f.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	news := map[int64]bool{}
	err := s.read(ctx, func(ctx context.Context, ex driver.Executor) error {
		if topic == cks.TopicTaskOutput {
			heads, err := ex.OutputHeads(ctx, ids)
			if err != nil {
				return err
			}
			f.mu.Lock()
			for _, h := range heads {
				if h.Seq > f.heads[h.TaskID] {
					f.heads[h.TaskID], news[h.TaskID] = h.Seq, true
				}
			}
			f.mu.Unlock()
			return nil
		}
		rows, err := ex.TaskGetMany(ctx, driver.TaskGetManyParams{IDs: ids})
		if err != nil {
			return err
		}
		f.mu.Lock()
		for _, r := range rows {
			if mark := fmt.Sprint(r.State, r.Attempts); mark != f.marks[r.ID] {
				f.marks[r.ID], news[r.ID] = mark, true
			}
		}
		f.mu.Unlock()
		return nil
	})
	if err != nil {
		// Unsure what changed (the read failed, or the feed is stopping):
		// every follower looks for itself, and meets the error if it lasts.
		for _, id := range ids {
			news[id] = true
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for id := range news {
		for w := range f.subs[id] {
			select {
			case w <- struct{}{}:
			default:
			}
		}
	}
}
