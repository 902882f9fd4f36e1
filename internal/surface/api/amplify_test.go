package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/base/datadir"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
)

// The amplification findings of issue 22: an 18 KB payload nested 9,000
// deep became a 162 MB answer (one indentation level per line), a payload
// of < a sixfold one (\u003c), and a page of such tasks hundreds of MB.

// TestDeepPayloadRefused: the 9,000-level payload that was accepted (201)
// is a 400 naming payload on both backends, in a create and an update, and
// the deepest value allowed is stored and answered as it was sent.
func TestDeepPayloadRefused(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		f := newFixtureOn(t, open)
		deep := `{"a":` + strings.Repeat("[", 9000) + strings.Repeat("]", 9000) + `}`
		for _, c := range []struct{ method, path, body, field string }{
			{"POST", "/v1/tasks", `{"type":"t","payload":` + deep + `}`, "payload"},
			{"POST", "/v1/tasks", `{"type":"t","metadata":` + deep + `}`, "metadata"},
		} {
			status, body := f.do(t, f.token, c.method, c.path, c.body)
			if e := decodeError(t, body); status != http.StatusBadRequest || e.Error.Field != c.field ||
				!strings.Contains(e.Error.Message, "nested at most 64 levels") {
				t.Errorf("%s %s with 9,000 levels in %s: %d %.200s, want 400 naming %s", c.method, c.path, c.field, status, body, c.field)
			}
		}
		ok := `{"a":` + strings.Repeat("[", cks.MaxJSONDepth-1) + strings.Repeat("]", cks.MaxJSONDepth-1) + `}`
		status, body := f.do(t, f.token, "POST", "/v1/tasks", `{"type":"t","payload":`+ok+`}`)
		if status != http.StatusCreated {
			t.Fatalf("create at the depth bound: %d %s", status, body)
		}
		task := created(t, body)
		if got := compact(t, task.Payload); got != ok {
			t.Errorf("payload at the depth bound came back as %.100s", got)
		}
	})
}

// TestAnswersAreCompact: an answer is compact JSON with <, > and & as they
// are, about the size of what was stored; ?pretty=1 indents it.
func TestAnswersAreCompact(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		f := newFixtureOn(t, open)
		text := strings.Repeat("<&>", 60<<10) // 180 KB: six times that as \u003c escapes
		status, body := f.do(t, f.token, "POST", "/v1/tasks", `{"type":"t","payload":{"s":`+quote(t, text)+`}}`)
		if status != http.StatusCreated {
			t.Fatalf("create: %d %.200s", status, body)
		}
		task := created(t, body)
		for _, path := range []string{fmt.Sprintf("/v1/tasks/%d", task.ID), "/v1/tasks"} {
			status, body := f.do(t, f.token, "GET", path, "")
			if status != http.StatusOK || !strings.Contains(body, text) || len(body) > len(text)+4096 {
				t.Errorf("GET %s: %d, %d bytes for a payload of %d (want the text as it is, at most 4 KB more)", path, status, len(body), len(text))
			}
			if strings.Contains(body, "\n ") {
				t.Errorf("GET %s is indented", path)
			}
		}
		status, body = f.do(t, f.token, "GET", fmt.Sprintf("/v1/tasks/%d?pretty=1", task.ID), "")
		if status != http.StatusOK || !strings.Contains(body, "\n  \"payload\": {\n    \"s\": \"<&>") {
			t.Errorf("GET ?pretty=1: %d, not indented: %.200s", status, body)
		}
		status, body = f.do(t, f.token, "GET", "/v1/tasks?pretty=yes", "")
		if e := decodeError(t, body); status != http.StatusBadRequest || e.Error.Field != "pretty" {
			t.Errorf("GET ?pretty=yes: %d %s, want 400 naming pretty", status, body)
		}
	})
}

// TestNumbersStoredAlike: a number written with an exponent, and a negative
// zero, come back in the same digits on both backends (Postgres's jsonb
// writes every number out; SQLite used to keep 1e300 as sent), and one
// whose written-out form would grow past the bound is refused.
func TestNumbersStoredAlike(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		f := newFixtureOn(t, open)
		status, body := f.do(t, f.token, "POST", "/v1/tasks", `{"type":"t","payload":{"big":1e300,"small":1.5e-3,"z":-0,"s":1.50E1}}`)
		if status != http.StatusCreated {
			t.Fatalf("create: %d %s", status, body)
		}
		dec := json.NewDecoder(strings.NewReader(body))
		dec.UseNumber()
		var got struct {
			Task struct{ Payload map[string]json.Number }
		}
		if err := dec.Decode(&got); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"big": "1" + strings.Repeat("0", 300), "small": "0.0015", "z": "0", "s": "15.0"}
		for k, w := range want {
			if string(got.Task.Payload[k]) != w {
				t.Errorf("payload %s = %.60s, want %.60s", k, got.Task.Payload[k], w)
			}
		}
		status, body = f.do(t, f.token, "POST", "/v1/tasks", `{"type":"t","payload":[1e400]}`)
		if e := decodeError(t, body); status != http.StatusBadRequest || e.Error.Field != "payload" {
			t.Errorf("1e400: %d %s, want 400 naming payload", status, body)
		}
	})
}

// TestLargestTasksListingBounded: a listing of the largest tasks a client
// may create stays under the bound docs/reliability.md states —
// cks.MaxPageBytes and one task — and paging by next_cursor still reaches
// every task.
func TestLargestTasksListingBounded(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		f := newFixtureOn(t, open)
		fill := func(n int) string { return strings.Repeat("x", n) }
		// The largest body a create takes, spent on the largest fields;
		// control characters cost six bytes as sent and as answered.
		desc := strings.Repeat("\u0001", 8<<10) + fill(cks.MaxLongTextLen-8<<10)
		body := fmt.Sprintf(`{"type":"big","title":%s,"description":%s,"acceptance_criteria":%s,"payload":{"p":%s},"metadata":{"m":%s}}`,
			quote(t, fill(cks.MaxTitleLen)), quote(t, desc), quote(t, fill(cks.MaxLongTextLen)),
			quote(t, fill(cks.MaxJSONBytes-8)), quote(t, fill(cks.MaxJSONBytes-8)))
		if len(body) > ops.MaxBody {
			t.Fatalf("the test's task is %d bytes, past the body limit", len(body))
		}
		const n = 12
		for i := range n {
			if status, resp := f.do(t, f.token, "POST", "/v1/tasks", body); status != http.StatusCreated {
				t.Fatalf("create %d: %d %.200s", i, status, resp)
			}
		}
		bound := cks.MaxPageBytes + len(body) + 4096
		seen, pages := 0, 0
		for cursor := int64(0); ; {
			pages++
			status, resp := f.do(t, f.token, "GET", fmt.Sprintf("/v1/tasks?limit=1000&cursor=%d", cursor), "")
			if status != http.StatusOK {
				t.Fatalf("list: %d %.200s", status, resp)
			}
			if len(resp) > bound {
				t.Errorf("a page of the largest tasks is %d bytes, past the bound %d", len(resp), bound)
			}
			var page cks.TaskPage
			if err := json.Unmarshal([]byte(resp), &page); err != nil {
				t.Fatal(err)
			}
			seen += len(page.Tasks)
			if cursor = page.Next; cursor == 0 {
				break
			}
		}
		if seen != n || pages < 2 {
			t.Errorf("paging listed %d tasks in %d pages, want %d in more than one", seen, pages, n)
		}
	})
}

// created is the task of a create's answer.
func created(t testing.TB, body string) cks.Task {
	t.Helper()
	var out struct{ Task cks.Task }
	if err := json.Unmarshal([]byte(body), &out); err != nil || out.Task.ID == 0 {
		t.Fatalf("create answered %.200s (%v)", body, err)
	}
	return out.Task
}

// quote is s as a JSON string.
func quote(t testing.TB, s string) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// compact is raw JSON without white space.
func compact(t testing.TB, raw json.RawMessage) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestCheckStoredReportsWhatPredatesTheBounds: a value stored before a
// bound existed (written here past the services, as an older hub would
// have) is still served, compactly, and check_stored names its task and
// field; a clean database reports nothing; only an admin may ask.
func TestCheckStoredReportsWhatPredatesTheBounds(t *testing.T) {
	backendtest.ForEachDriver(t, func(t *testing.T, open backendtest.DriverOpener) {
		c := clock.NewFake(backendtest.T0)
		s, d := backendtest.Store(t, open, driver.WithClock(c))
		f := fixtureOn(t, datadir.Dir(t.TempDir()), s, c, false)
		clean, _, err := s.Tasks.Enqueue(context.Background(), cks.NewTask{Type: "t", Title: "clean"})
		if err != nil {
			t.Fatal(err)
		}
		check := func(what string) cks.StoredCheck {
			t.Helper()
			status, body := f.do(t, f.token, "GET", "/v1/stored/check?what="+what, "")
			var out cks.StoredCheck
			if status != http.StatusOK || json.Unmarshal([]byte(body), &out) != nil {
				t.Fatalf("check %s: %d %.300s", what, status, body)
			}
			return out
		}
		if got := check("tasks"); len(got.Problems) != 0 || got.Checked != 1 {
			t.Errorf("a clean ledger: %+v, want 1 checked and no problem", got)
		}
		old, _, err := s.Tasks.Enqueue(context.Background(), cks.NewTask{Type: "t", Title: "from before the bounds"})
		if err != nil {
			t.Fatal(err)
		}
		deep := strings.Repeat("[", 100) + strings.Repeat("]", 100)
		backendtest.SetPayloadUnchecked(t, d, old.ID, []byte(deep))
		status, body := f.do(t, f.token, "GET", fmt.Sprintf("/v1/tasks/%d", old.ID), "")
		if status != http.StatusOK || !strings.Contains(body, `"payload":`+deep) {
			t.Errorf("the old task is not served compactly: %d %.200s", status, body)
		}
		got := check("tasks")
		if len(got.Problems) != 1 || got.Problems[0].ID != old.ID || got.Problems[0].Field != "payload" ||
			!strings.Contains(got.Problems[0].Problem, "nested at most 64 levels") || got.Checked != 2 {
			t.Errorf("check after an old deep payload: %+v, want task %d's payload (not %d's)", got, old.ID, clean.ID)
		}
		if got := check("objects"); len(got.Problems) != 0 {
			t.Errorf("objects: %+v", got)
		}
		if status, body := f.do(t, f.token, "GET", "/v1/stored/check?what=rows", ""); status != http.StatusBadRequest ||
			decodeError(t, body).Error.Field != "what" {
			t.Errorf("what=rows: %d %s, want 400 naming what", status, body)
		}
		reader := f.tokenWith(t, cks.Grant{Resource: "/", Permission: auth.PermRead})
		if status, _ := f.do(t, reader, "GET", "/v1/stored/check?what=tasks", ""); status != http.StatusForbidden {
			t.Errorf("a reader: %d, want 403", status)
		}
	})
}
