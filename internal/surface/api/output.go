package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
)

// followable wraps get_output's handler h: a request with follow=1 (or
// true) is answered a stream of Server-Sent Events (followOutput), any
// other the page h answers.
func (a *API) followable(op ops.Operation, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("follow") {
		case "1", "true":
			a.followOutput(op, w, r)
		default:
			h.ServeHTTP(w, r)
		}
	})
}

// followOutput streams task {task_id}'s output as Server-Sent Events:
// event: output, id: the chunk's seq, data: the chunk (cks.OutputChunk),
// for every chunk after the after parameter — or after the Last-Event-ID
// header's seq, which a reconnecting EventSource sends, so a follower that
// reconnects neither loses nor repeats a chunk — as they are appended,
// then event: end, data: the task's last page without chunks (its state
// and attempt), when the attempt ends (ledger.FollowOutput). It ends too
// when the client leaves, the hub shuts down or the credential no longer
// authenticates, as /v1/events does. The operation is called first, as
// any request is (the permission, the input, the task's existence: a
// refusal is the ordinary JSON error), and its page is the stream's first
// events. A stream holds at most two pages of ledger.FollowPage chunks.
func (a *API) followOutput(op ops.Operation, w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		WriteError(w, http.StatusInternalServerError, cks.CodeInternal, "streaming unsupported")
		return
	}
	q := r.URL.Query()
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		seq, err := strconv.ParseInt(id, 10, 64)
		if err != nil || seq < 0 {
			a.fail(w, r, &cks.FieldError{Field: "Last-Event-ID", Expected: "the seq of the last output event received (0 or more)"})
			return
		}
		q.Set("after", strconv.FormatInt(seq, 10))
	}
	q.Set("limit", strconv.Itoa(ops.FollowPage))
	out, err := ops.Call(r.Context(), a.svc, op, ops.Request{PathValue: r.PathValue, Query: q})
	if err != nil {
		a.fail(w, r, err)
		return
	}
	first := out.(cks.OutputPage)
	id, _ := strconv.ParseInt(r.PathValue("task_id"), 10, 64)
	after, _ := strconv.ParseInt(q.Get("after"), 10, 64)

	clearDeadlines(w) // the stream lasts as long as its client
	revoked := a.revoked()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if !writeChunks(w, first.Chunks) {
		return
	}
	fl.Flush()
	if len(first.Chunks) > 0 {
		after = first.NextAfter
	}

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	pages := make(chan cks.OutputPage) // unbuffered: the follower waits for the write
	type end struct {
		page cks.OutputPage
		err  error
	}
	ended := make(chan end, 1)
	go func() {
		last, err := a.svc.Tasks.FollowOutput(ctx, id, after, func(p cks.OutputPage) error {
			select {
			case pages <- p:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		ended <- end{last, err}
	}()
	defer func() {
		cancel()
		<-ended
	}()
	keep := time.NewTicker(a.cfg.KeepAlive)
	defer keep.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-a.streams.Done():
			return
		case <-revoked:
			if auth.CheckCredential(r.Context()) != nil {
				return
			}
			revoked = a.revoked()
			continue
		case <-keep.C:
			if auth.CheckCredential(r.Context()) != nil {
				return
			}
			if _, err := w.Write([]byte(": keep-alive\n\n")); err != nil {
				return
			}
		case p := <-pages:
			if !writeChunks(w, p.Chunks) {
				return
			}
		case e := <-ended:
			ended <- e // for the deferred wait
			if e.err != nil {
				if r.Context().Err() == nil {
					a.cfg.Logger.Warn("output follow", "task_id", id, "err", e.err)
				}
				return
			}
			data, _ := json.Marshal(e.page)
			w.Write([]byte("event: end\ndata: " + string(data) + "\n\n")) //nolint:errcheck // the client went away
			fl.Flush()
			return
		}
		fl.Flush()
	}
}

// writeChunks writes each chunk as an output event with its seq as id,
// reporting false when the client went away.
func writeChunks(w http.ResponseWriter, chunks []cks.OutputChunk) bool {
	for _, c := range chunks {
		data, _ := json.Marshal(c)
		if _, err := w.Write([]byte("id: " + strconv.FormatInt(c.Seq, 10) + "\nevent: output\ndata: " + string(data) + "\n\n")); err != nil {
			return false
		}
	}
	return true
}
