package api_test

import (
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
	"github.com/cks-dev/cks/internal/service/knowledge"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// badTextInBody are JSON string contents (between the quotes) that decode
// to text no backend stores: a NUL byte. (Raw invalid UTF-8 in a JSON
// string decodes to U+FFFD; in a JSON value kept as it is — payload,
// metadata, content — it is one of backendtest.BadJSON.)
// And text longer than every field's limit.
var badTextInBody = []string{`\u0000`, `nul\u0000byte`, backendtest.TooLongText}

// badTextInURL are query and path values that decode to text no backend
// stores: a NUL byte, invalid UTF-8, an encoded surrogate.
var badTextInURL = []string{"%00", "a%00b", "%FF", "caf%C3", "%ED%A0%80"}

// TestBadTextIs400 sends, on both backends, every endpoint's string and JSON
// body fields, query parameters and path values with text Postgres cannot
// store, and wants 400 invalid_argument naming the field and nothing
// written (Postgres answered 500, SQLite 200 and stored it).
func TestBadTextIs400(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		c := clock.NewFake(backendtest.T0)
		s := open(t, driver.WithClock(c))
		f := fixtureOn(t, datadir.Dir(t.TempDir()), s, c, false)

		open1, _ := backendtest.Into(t, s, cks.TaskOpen, "api-open")
		running, runTok := backendtest.Into(t, s, cks.TaskRunning, "api-run")
		asking, _ := backendtest.Into(t, s, cks.TaskNeedsInput, "api-input")
		review, _ := backendtest.Into(t, s, cks.TaskNeedsReview, "api-review")
		reviewing, reviewTok := backendtest.Into(t, s, cks.TaskReviewing, "api-reviewing")
		stopped, _ := backendtest.Into(t, s, cks.TaskStopped, "api-stopped")
		aborted, abortTok := backendtest.Into(t, s, cks.TaskRunning, "api-aborted")
		if _, err := s.Tasks.StopTask(context.Background(), ledger.StopParams{ID: aborted.ID, Actor: "op", Reason: "hold"}); err != nil {
			t.Fatal(err)
		}
		obj := backendtest.MustCreateObject(t, s.Objects, knowledge.NewObject{Kind: "claim", Content: json.RawMessage(`{"v":1}`), CreatedBy: "op"})

		task := func(id int64, rest string) string { return fmt.Sprintf("/v1/tasks/%d%s", id, rest) }
		lease := func(tok, rest string) string { return `{"lease_token":"` + tok + `"` + rest + `}` }
		type bodyCase struct {
			method, path, body, field string
			json                      bool // @ is a JSON value, not the content of a JSON string
		}
		bodies := []bodyCase{
			{"POST", "/v1/tasks", `{"type":"@"}`, "type", false},
			{"POST", "/v1/tasks", `{"type":"t","title":"@"}`, "title", false},
			{"POST", "/v1/tasks", `{"type":"t","description":"@"}`, "description", false},
			{"POST", "/v1/tasks", `{"type":"t","acceptance_criteria":"@"}`, "acceptance_criteria", false},
			{"POST", "/v1/tasks", `{"type":"t","dedupe_key":"@"}`, "dedupe_key", false},
			{"POST", "/v1/tasks", `{"type":"t","created_by":"@"}`, "created_by", false},
			{"POST", "/v1/tasks", `{"type":"t","payload":@}`, "payload", true},
			{"POST", "/v1/tasks", `{"type":"t","metadata":@}`, "metadata", true},
			{"POST", task(asking.ID, "/answer"), `{"text":"@"}`, "text", false},
			{"POST", task(open1.ID, "/cancel"), `{"reason":"@"}`, "reason", false},
			{"POST", task(running.ID, "/stop"), `{"reason":"@"}`, "reason", false},
			{"POST", task(running.ID, "/stop"), `{"reason":"r","deadline":"@"}`, "deadline", false},
			{"POST", task(stopped.ID, "/start"), `{"reason":"@"}`, "reason", false},
			{"PATCH", task(open1.ID, ""), `{"title":"@"}`, "title", false},
			{"PATCH", task(running.ID, ""), `{"description":"@"}`, "description", false},
			{"PATCH", task(open1.ID, ""), `{"acceptance_criteria":"@"}`, "acceptance_criteria", false},
			{"PATCH", task(running.ID, ""), `{"payload":@}`, "payload", true},
			{"PATCH", task(open1.ID, ""), `{"metadata":@}`, "metadata", true},
			{"PATCH", task(open1.ID, ""), `{"add_children":[{"type":"c","title":"@"}]}`, "add_children[0].title", false},
			{"PATCH", task(open1.ID, ""), `{"add_children":[{"type":"c","payload":@}]}`, "add_children[0].payload", true},
			{"POST", "/v1/tasks/claim", `{"worker":"@","types":["api-open"]}`, "worker", false},
			{"POST", "/v1/tasks/claim", `{"types":["api-open","@"]}`, "types", false},
			{"POST", task(running.ID, "/running"), lease("@", ""), "lease_token", false},
			{"POST", task(running.ID, "/touch"), lease(runTok+"@", ""), "lease_token", false},
			{"POST", task(running.ID, "/evidence"), lease(runTok, `,"kind":"@","body":"b"`), "kind", false},
			{"POST", task(running.ID, "/evidence"), lease(runTok, `,"kind":"log","body":"@"`), "body", false},
			{"POST", task(running.ID, "/evidence"), lease("@", `,"kind":"log","body":"b"`), "lease_token", false},
			{"POST", task(running.ID, "/decisions"), lease(runTok, `,"kind":"@","text":"t","derived_from_revision":1`), "kind", false},
			{"POST", task(running.ID, "/decisions"), lease(runTok, `,"kind":"k","text":"@","derived_from_revision":1`), "text", false},
			{"POST", task(running.ID, "/workspace/reuse"), lease(runTok, `,"path":"/ws/@","derived_from_revision":1`), "path", false},
			{"POST", task(aborted.ID, "/abort/confirm"), lease(abortTok+"@", ""), "lease_token", false},
			{"POST", task(running.ID, "/complete"), lease(runTok, `,"result":"@"`), "result", false},
			{"POST", task(running.ID, "/fail"), lease(runTok, `,"retryable":true,"reason":"@"`), "reason", false},
			{"POST", task(running.ID, "/request-input"), lease(runTok, `,"question":"@"`), "question", false},
			{"POST", task(review.ID, "/review/claim"), `{"reviewer":"@"}`, "reviewer", false},
			{"POST", task(reviewing.ID, "/review/approve"), lease(reviewTok, `,"note":"@"`), "note", false},
			{"POST", task(reviewing.ID, "/review/reject"), lease(reviewTok, `,"note":"@"`), "note", false},
			{"POST", task(reviewing.ID, "/review/reject"), lease(reviewTok+"@", `,"note":"n"`), "lease_token", false},
			{"POST", "/v1/objects", `{"question":"@"}`, "question", false},
			{"POST", "/v1/objects", `{"question":"why?","corpus":"/data/@"}`, "corpus", false},
			{"POST", fmt.Sprintf("/v1/objects/%d/versions", obj.ID), fmt.Sprintf(`{"base_version":%d,"content":@}`, obj.HeadVersion), "content", true},
			{"POST", "/v1/tokens", `{"name":"@","grants":[{"resource":"/tasks","permission":"read"}]}`, "name", false},
			{"POST", "/v1/tokens", `{"name":"n","grants":[{"resource":"/sweepers/@","permission":"read"}]}`, "grants[0].resource", false},
		}
		type urlCase struct{ method, path, field string }
		urls := []urlCase{
			{"GET", "/v1/tasks?type=@", "type"},
			{"GET", "/v1/tasks?type=ok,@", "type"},
			{"GET", "/v1/tasks?state=@", "state"},
			{"GET", "/v1/tasks?stopped_longer_than=@", "stopped_longer_than"},
			{"GET", "/v1/tasks?cursor=@", "cursor"},
			{"GET", "/v1/tasks?limit=@", "limit"},
			{"GET", "/v1/tasks?unknown=@", "unknown"},
			{"GET", "/v1/tasks?@=1", "query"},
			{"GET", "/v1/objects?kind=@", "kind"},
			{"GET", "/v1/objects?status=@", "status"},
			{"GET", "/v1/tasks/@", "task_id"},
			{"GET", "/v1/objects/@/versions", "object_id"},
			{"GET", "/v1/processes/@", "process_kind"},
			{"POST", "/v1/processes/@/stop", "process_kind"},
			{"GET", "/v1/sweepers/@", "agent_id"},
			{"POST", "/v1/sweepers/@/start", "agent_id"},
			{"POST", "/v1/sweepers/@/stop", "agent_id"},
			{"DELETE", "/v1/tokens/@", "id"},
		}

		before := backendtest.State(t, s)
		check := func(what, method, path, body, field string) {
			t.Helper()
			status, resp := f.do(t, f.token, method, path, body)
			if status != http.StatusBadRequest {
				t.Errorf("%.200s: status %d, want 400: %.300s", what, status, resp)
				return
			}
			e := decodeError(t, resp)
			if e.Error.Code != "invalid_argument" || e.Error.Field != field {
				t.Errorf("%.200s: error %.300v, want invalid_argument naming %s", what, e.Error, field)
			}
		}
		for _, bc := range bodies {
			values := badTextInBody
			if bc.json {
				values = backendtest.BadJSON
			}
			for _, v := range values {
				body := strings.Replace(bc.body, "@", v, 1)
				check(fmt.Sprintf("%s %s %s", bc.method, bc.path, body), bc.method, bc.path, body, bc.field)
			}
			after := backendtest.State(t, s)
			backendtest.DiffState(t, bc.method+" "+bc.path+" with a bad "+bc.field, before, after)
			before = after
		}
		for _, uc := range urls {
			for _, v := range badTextInURL {
				path := strings.Replace(uc.path, "@", v, 1)
				body := ""
				if uc.method == "POST" {
					body = "{}"
				}
				check(uc.method+" "+path, uc.method, path, body, uc.field)
			}
			after := backendtest.State(t, s)
			backendtest.DiffState(t, uc.method+" "+uc.path+" with a bad "+uc.field, before, after)
			before = after
		}
	})
}
