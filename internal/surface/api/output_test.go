package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/waitfor"
)

// sseEvent is one Server-Sent Event.
type sseEvent struct{ id, event, data string }

// sseStream is an open event stream.
type sseStream struct {
	resp   *http.Response
	r      *bufio.Reader
	cancel context.CancelFunc
}

// follow opens GET path with the Last-Event-ID lastID ("" for none).
func (f *fixture) follow(t testing.TB, token, path, lastID string) *sseStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", f.srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		t.Fatalf("follow %s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s := &sseStream{resp: resp, r: bufio.NewReader(resp.Body), cancel: cancel}
	t.Cleanup(s.close)
	return s
}

func (s *sseStream) close() { s.cancel(); s.resp.Body.Close() }

// next reads the next event (comments skipped), failing after the
// deadline.
func (s *sseStream) next(t testing.TB) sseEvent {
	t.Helper()
	got := make(chan sseEvent, 1)
	fail := make(chan error, 1)
	go func() {
		var e sseEvent
		for {
			line, err := s.r.ReadString('\n')
			if err != nil {
				fail <- err
				return
			}
			line = strings.TrimSuffix(line, "\n")
			switch {
			case line == "":
				if e.event != "" {
					got <- e
					return
				}
			case strings.HasPrefix(line, ":"):
			case strings.HasPrefix(line, "id: "):
				e.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				e.event = line[7:]
			case strings.HasPrefix(line, "data: "):
				e.data = line[6:]
			}
		}
	}()
	select {
	case e := <-got:
		return e
	case err := <-fail:
		t.Fatalf("event stream: %v", err)
	case <-time.After(waitfor.Limit):
		s.close()
		t.Fatal("no event within the deadline")
	}
	return sseEvent{}
}

// TestOutputFollowResumes (both backends): a follower of a running task's
// output over SSE gets each chunk as an output event whose id is its seq;
// its connection dropped mid-stream, it reconnects with Last-Event-ID and
// gets exactly the chunks it missed — appended meanwhile — then the new
// ones live, then event: end with the task's state when the attempt
// completes: every chunk once, in order.
func TestOutputFollowResumes(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		f := newFixtureOn(t, open)
		worker := f.tokenWith(t, cks.Grant{Resource: "/tasks", Permission: auth.PermAppend})
		reader := f.tokenWith(t, cks.Grant{Resource: "/tasks", Permission: auth.PermRead})
		if status, body := f.do(t, f.token, "POST", "/v1/tasks", `{"type":"logs","title":"x"}`); status != http.StatusCreated {
			t.Fatalf("create: %d %s", status, body)
		}
		id, lease, _ := f.httpClaim(t, worker, "logs", "w1")
		path := fmt.Sprintf("/v1/tasks/%d/output", id)
		n := 0
		appendOne := func() string {
			t.Helper()
			n++
			text := fmt.Sprintf("line %d\n", n)
			body, _ := json.Marshal(map[string]any{"lease_token": lease, "stream": "stdout", "text": text})
			status, out := f.do(t, worker, "POST", path, string(body))
			if status != http.StatusCreated || !strings.Contains(out, fmt.Sprintf(`"seq":%d`, n)) {
				t.Fatalf("append %d: %d %s", n, status, out)
			}
			return text
		}
		var seen []string
		expect := func(s *sseStream, text string) {
			t.Helper()
			e := s.next(t)
			var c cks.OutputChunk
			if err := json.Unmarshal([]byte(e.data), &c); err != nil || e.event != "output" || c.Text != text || e.id != strconv.FormatInt(c.Seq, 10) {
				t.Fatalf("event %+v, want the chunk %q", e, text)
			}
			seen = append(seen, c.Text)
		}
		a1, a2, a3 := appendOne(), appendOne(), appendOne()
		s := f.follow(t, reader, path+"?follow=1", "")
		expect(s, a1)
		expect(s, a2)
		s.close() // dropped mid-stream: a3 was sent, never read
		a4, a5 := appendOne(), appendOne()
		s = f.follow(t, reader, path+"?follow=1", "2")
		expect(s, a3)
		expect(s, a4)
		expect(s, a5)
		a6 := appendOne() // live
		expect(s, a6)
		if status, body := f.do(t, worker, "POST", fmt.Sprintf("/v1/tasks/%d/complete", id), fmt.Sprintf(`{"lease_token":%q,"result":"ok"}`, lease)); status != http.StatusOK {
			t.Fatalf("complete: %d %s", status, body)
		}
		e := s.next(t)
		var last cks.OutputPage
		if err := json.Unmarshal([]byte(e.data), &last); err != nil || e.event != "end" || last.State != cks.TaskCompleted || last.Live {
			t.Fatalf("final event %+v", e)
		}
		if got, want := strings.Join(seen, ""), "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\n"; got != want {
			t.Fatalf("the follower read %q, want %q", got, want)
		}
		// A follow of the finished task sends what there is and ends.
		s = f.follow(t, reader, path+"?follow=1&after=5", "")
		seen = nil
		expect(s, a6)
		if e := s.next(t); e.event != "end" {
			t.Fatalf("after the chunks of a finished task: %+v", e)
		}
	})
}

// TestOutputRefusals (both backends): a chunk past 64 KiB, a bad stream,
// a stale lease, an unknown task, a bad cursor and a reader without read
// on the task are refused with a clear 4xx naming what is wrong, and
// nothing is kept.
func TestOutputRefusals(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		f := newFixtureOn(t, open)
		worker := f.tokenWith(t, cks.Grant{Resource: "/tasks", Permission: auth.PermAppend})
		stranger := f.tokenWith(t, cks.Grant{Resource: "/objects", Permission: auth.PermRead})
		if status, body := f.do(t, f.token, "POST", "/v1/tasks", `{"type":"logs","title":"x"}`); status != http.StatusCreated {
			t.Fatalf("create: %d %s", status, body)
		}
		id, lease, _ := f.httpClaim(t, worker, "logs", "w1")
		path := fmt.Sprintf("/v1/tasks/%d/output", id)
		body := func(stream, text string) string {
			b, _ := json.Marshal(map[string]any{"lease_token": lease, "stream": stream, "text": text})
			return string(b)
		}
		for _, c := range []struct {
			name, token, method, path, body string
			status                          int
			says                            string
		}{
			{"a chunk past 64 KiB", worker, "POST", path, body("stdout", strings.Repeat("x", cks.MaxOutputChunk+1)), 400, `"text"`},
			{"a stream with a space", worker, "POST", path, body("std out", "x"), 400, `"stream"`},
			{"a stale lease", worker, "POST", path, `{"lease_token":"stale","text":"x"}`, 409, "lease"},
			{"an unknown task", worker, "POST", fmt.Sprintf("/v1/tasks/%d/output", id+100), body("", "x"), 404, "not_found"},
			{"read: an unknown task", f.token, "GET", fmt.Sprintf("/v1/tasks/%d/output", id+100), "", 404, "not_found"},
			{"read: a negative after", f.token, "GET", path + "?after=-1", "", 400, "after"},
			{"read: a limit past 1000", f.token, "GET", path + "?limit=1001", "", 400, "limit"},
			{"read without read on the task", stranger, "GET", path, "", 403, "read"},
			{"follow without read on the task", stranger, "GET", path + "?follow=1", "", 403, "read"},
		} {
			status, out := f.do(t, c.token, c.method, c.path, c.body)
			if status != c.status || !strings.Contains(out, c.says) {
				t.Errorf("%s: %d %s; want %d saying %s", c.name, status, out, c.status, c.says)
			}
		}
		req, _ := http.NewRequest("GET", f.srv.URL+path+"?follow=1", nil)
		req.Header.Set("Authorization", "Bearer "+f.token)
		req.Header.Set("Last-Event-ID", "abc")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var eb cks.ErrorBody
		json.NewDecoder(resp.Body).Decode(&eb) //nolint:errcheck // checked below
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(eb.Error.Message, "Last-Event-ID") {
			t.Errorf("a bad Last-Event-ID: %d %+v", resp.StatusCode, eb)
		}
		status, out := f.do(t, f.token, "GET", path, "")
		if status != 200 || !strings.Contains(out, `"chunks":[]`) {
			t.Errorf("after the refusals the output is %d %s, want none", status, out)
		}
	})
}
