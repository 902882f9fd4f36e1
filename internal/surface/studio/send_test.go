package studio_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/surface/studio"
)

// TestFragmentsCompressedAndConditional: on both backends, the board's
// live fragment goes gzipped to a client that takes it (the same HTML, a
// fraction of the bytes), carries an ETag, and a request naming that ETag
// gets a 304 without a body — what a live region sends when it asks again
// and nothing changed (issue 39: a burst cost an open board 15.6 MB). The
// studio's clock stands still, so that two renders of the same board are
// the same to the byte (its ages, "3s ago", move with the clock: CI
// flake, two renders a second apart on a loaded machine).
func TestFragmentsCompressedAndConditional(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend.Backend) {
		h := studio.New(&ops.Services{Tasks: b.Tasks, Principals: b.Principals, Clock: clock.NewFake(time.Now().Add(time.Hour))},
			studio.Options{Version: "v-test"})
		for i := range 100 {
			backendtest.MustEnqueue(t, b, cks.NewTask{Type: "batch", Title: fmt.Sprintf("nightly report %d", i)})
		}
		plain := getAs(t, h, "/studio/tasks", asOperator)
		wantHTML(t, plain, http.StatusOK)
		zipped := getAs(t, h, "/studio/tasks", func(r *http.Request) *http.Request {
			r.Header.Set("Accept-Encoding", "br, gzip;q=0.8")
			return asOperator(r)
		})
		if zipped.header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("Content-Encoding %q for a client taking gzip", zipped.header.Get("Content-Encoding"))
		}
		zr, err := gzip.NewReader(bytes.NewReader([]byte(zipped.body)))
		if err != nil {
			t.Fatal(err)
		}
		unzipped, err := io.ReadAll(zr)
		if err != nil || string(unzipped) != plain.body {
			t.Fatalf("the gzipped fragment is not the fragment (%v)", err)
		}
		if len(zipped.body)*4 > len(plain.body) {
			t.Errorf("a board of 100 tasks: %d bytes gzipped of %d, want under a quarter", len(zipped.body), len(plain.body))
		}
		etag := plain.header.Get("ETag")
		if etag == "" || zipped.header.Get("ETag") != etag {
			t.Fatalf("ETag %q plain, %q gzipped: want one, the same", etag, zipped.header.Get("ETag"))
		}
		again := getAs(t, h, "/studio/tasks", func(r *http.Request) *http.Request {
			r.Header.Set("If-None-Match", etag)
			return asOperator(r)
		})
		if again.status != http.StatusNotModified || again.body != "" {
			t.Errorf("asked again with its ETag: %d with %d bytes, want 304 and none", again.status, len(again.body))
		}
		backendtest.MustEnqueue(t, b, cks.NewTask{Type: "batch", Title: "one more"})
		changed := getAs(t, h, "/studio/tasks", func(r *http.Request) *http.Request {
			r.Header.Set("If-None-Match", etag)
			return asOperator(r)
		})
		if changed.status != http.StatusOK || changed.header.Get("ETag") == etag {
			t.Errorf("after a change, with the old ETag: %d, ETag %q; want 200 and a new one", changed.status, changed.header.Get("ETag"))
		}
	})
}
