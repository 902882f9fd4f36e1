package studio_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/knowledge"
)

// TestObjectPageShowsClaim: on both backends, an object a pipeline worker
// claimed (ADR-007 §2) names the worker and since when on its page; once
// the claim went stale and the lease reaper's release ran
// (ReleaseStaleClaims), the page names no holder.
func TestObjectPageShowsClaim(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend.Backend) {
		ctx := context.Background()
		content, _ := json.Marshal(map[string]string{"question": "Who holds this?"})
		q, err := b.Objects.CreateObject(ctx, knowledge.NewObject{Kind: cks.KindQuestion, Content: content,
			Status: cks.StatusAwaitingResearch, CreatedBy: "tester"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Objects.ClaimObject(ctx, q.ID, "researcher/w-1", []string{cks.StatusAwaitingResearch}); err != nil {
			t.Fatal(err)
		}
		h := knowledgeStudio(b)
		page := fmt.Sprintf("/objects/%d", q.ID)
		r := get(t, h, page)
		wantHTML(t, r, http.StatusOK)
		mustContain(t, "claimed object", r.body, "<dt>Claimed by</dt><dd data-claim><code>researcher/w-1</code>", "since <time datetime=")

		if n, err := b.Objects.ReleaseStaleClaims(backendtest.Ctx(t), time.Now().Add(time.Hour)); err != nil || n != 1 {
			t.Fatalf("ReleaseStaleClaims = %d, %v; want the one claim", n, err)
		}
		released := get(t, h, page)
		wantHTML(t, released, http.StatusOK)
		mustNotContain(t, "released object", released.body, "data-claim", "researcher/w-1")
	})
}

// TestProcessCardShowsStart: a process card says when the instance
// started (ADR-014's started_at), beside its heartbeat.
func TestProcessCardShowsStart(t *testing.T) {
	e := newEnv(t)
	r := backendtest.Liveness("started-instance-0000001", "critic", 0)
	r.StartedAt = backendtest.T0.Add(-2 * time.Hour)
	backendtest.MustUpsert(t, e.store, r)
	e.clock.Advance(5 * time.Second)
	page := get(t, e.h, "/")
	wantHTML(t, page, http.StatusOK)
	mustContain(t, "card", processCard(t, page.body, "started-instance-0000001"),
		`<dt>Started</dt><dd><time datetime="2026-11-30T10:00:00Z" title="2026-11-30T10:00:00Z">2h ago</time></dd>`)
}
