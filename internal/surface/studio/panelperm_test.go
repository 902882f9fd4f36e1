package studio_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/runtime/sweeper"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/liveness"
	"github.com/cks-dev/cks/internal/surface/studio"
)

// TestPanelControlsHonourPermissions: on both backends, the Agent Panel's
// Stop of a process card and Start (or Stop) of a sweeper card are enabled for
// a principal holding control on them and disabled, naming the permission
// the operation needs, for one who does not: a reader sees all of them
// disabled; control on /processes/critic enables that kind's Stop only.
func TestPanelControlsHonourPermissions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend.Backend) {
		reg := b.Sweepers.Registry()
		if _, err := reg.Register(stepSweeper{id: "lease_reaper"}, sweeper.Options{Interval: time.Hour, ConfigEnabled: true,
			Overrides: b.Sweepers, Logger: slog.New(slog.DiscardHandler)}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = reg.StopAll(context.Background()) })
		backendtest.MustUpsert(t, b, backendtest.Liveness("critic-instance-00000001", "critic", 0))
		backendtest.MustUpsert(t, b, backendtest.Liveness("enrich-instance-00000002", "enrichment", 0))
		c := clock.NewFake(backendtest.T0)
		h := studio.New(&ops.Services{Liveness: liveness.NewService(b.Driver(), c), Sweepers: b.Sweepers, Principals: b.Principals, Clock: c},
			studio.Options{Version: "v-test"})
		refused := func(res string) string {
			return fmt.Sprintf(`disabled title="forbidden: principal &#34;viewer&#34; needs control on %s"`, res)
		}

		reader := getAs(t, h, "/", as(t, b, cks.Grant{Resource: "/", Permission: auth.PermRead}))
		wantHTML(t, reader, http.StatusOK)
		mustContain(t, "a reader's critic card", processCard(t, reader.body, "critic-instance-00000001"),
			`data-process-stop="critic-instance-00000001" `+refused("/processes/critic"), `<span class="refused">`)
		mustContain(t, "a reader's sweeper card", sweeperCard(t, reader.body, "lease_reaper"),
			`data-sweeper-action="start" `+refused("/sweepers/lease_reaper"))

		critic := getAs(t, h, "/", as(t, b, cks.Grant{Resource: "/", Permission: auth.PermRead},
			cks.Grant{Resource: "/processes/critic", Permission: auth.PermControl}))
		cc := processCard(t, critic.body, "critic-instance-00000001")
		mustContain(t, "the critic operator's critic card", cc, `data-process-stop="critic-instance-00000001" title="Finish the current task, then exit">Stop`)
		mustNotContain(t, "the critic operator's critic card", cc, "disabled")
		mustContain(t, "the critic operator's enrichment card", processCard(t, critic.body, "enrich-instance-00000002"),
			refused("/processes/enrichment"))

		op := get(t, h, "/")
		mustNotContain(t, "the operator's panel", op.body, "disabled", `class="refused"`)
	})
}
