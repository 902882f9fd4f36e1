package studio_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/config"
	"github.com/cks-dev/cks/internal/hub"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/knowledge"
	"github.com/cks-dev/cks/internal/surface/studio"
)

// forEachBackend runs f on a fresh database of each backend (Postgres
// skipped without CKS_TEST_DATABASE_URL, failing with CI=true).
func forEachBackend(t *testing.T, f func(t *testing.T, b *backend.Backend)) {
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			url := filepath.Join(t.TempDir(), "cks.db")
			if name == "postgres" {
				url = backendtest.PostgresURL(t)
			}
			b, err := backend.Open(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			f(t, b)
		})
	}
}

// knowledgeStudio is a studio over b's knowledge store and principals.
func knowledgeStudio(b *backend.Backend) http.Handler {
	return studio.New(&ops.Services{Objects: b.Objects, Principals: b.Principals}, studio.Options{Version: "v-test"})
}

// ask runs question through the research pipeline (the offline model, the
// shipped corpus), in order, and returns the question's id.
func ask(t testing.TB, b *backend.Backend, question string) int64 {
	t.Helper()
	set, err := config.ParsePipeline(nil)
	if err != nil {
		t.Fatal(err)
	}
	o, err := hub.NewPipeline(hub.PipelineConfig{Store: b.Objects, Changes: b.Changes, Settings: set, Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	content, _ := json.Marshal(map[string]string{"question": question})
	q, err := b.Objects.CreateObject(context.Background(), knowledge.NewObject{Kind: cks.KindQuestion, Content: content,
		Status: cks.StatusAwaitingResearch, CreatedBy: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.RunSequential(context.Background(), q.ID); err != nil {
		t.Fatal(err)
	}
	return q.ID
}

// forked makes an object with versions 1 → 2 and 1 → 3 (two heads) and
// returns its id.
func forked(t testing.TB, b *backend.Backend) int64 {
	t.Helper()
	ctx := context.Background()
	o, err := b.Objects.CreateObject(ctx, knowledge.NewObject{Kind: cks.KindClaim, Title: "the sky",
		Content: []byte(`{"text":"the sky is blue","source":"a.md","tags":["x"]}`), CreatedBy: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{`{"text":"the sky is blue by day","source":"a.md","tags":["x"]}`,
		`{"text":"the sky is blue","source":"b.md","tags":["x"],"note":"moved"}`} {
		if _, err := b.Objects.WriteVersion(ctx, o.ID, 1, []byte(c), "writer"); err != nil {
			t.Fatal(err)
		}
	}
	return o.ID
}

// TestObjectList: the list shows objects with their kind, status and
// versions, filters by kind, status and a search through list_objects,
// pages by cursor, and says what to do when nothing matches; a search the
// operation refuses is a 400 naming q.
func TestObjectList(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend.Backend) {
		q := ask(t, b, "How does cks stop a running task?")
		f := forked(t, b)
		h := knowledgeStudio(b)
		all := get(t, h, studio.ObjectsPath)
		wantHTML(t, all, http.StatusOK)
		mustContain(t, "list", all.body, "<title>Knowledge · cks studio</title>", `aria-current="page">Knowledge<`,
			fmt.Sprintf(`data-object-row="%d"`, q), "How does cks stop a running task?", `state--resolved`,
			fmt.Sprintf(`href="/objects/%d/forks"`, f), `<label for="f-q">Search</label>`)
		for _, c := range []struct {
			query      string
			want, omit []string
		}{
			{"?kind=question", []string{fmt.Sprintf(`data-object-row="%d"`, q)}, []string{fmt.Sprintf(`data-object-row="%d"`, f)}},
			{"?q=SKY+IS", []string{fmt.Sprintf(`data-object-row="%d"`, f)}, []string{fmt.Sprintf(`data-object-row="%d"`, q)}},
			{"?status=resolved&kind=question", []string{fmt.Sprintf(`data-object-row="%d"`, q)}, []string{`data-object-row="2"`}},
			{"?q=zebra", []string{"No object matches these filters.", `href="/objects">Clear the filters`}, []string{"data-object-row"}},
		} {
			r := get(t, h, studio.ObjectsPath+c.query)
			wantHTML(t, r, http.StatusOK)
			mustContain(t, c.query, r.body, c.want...)
			mustNotContain(t, c.query, r.body, c.omit...)
		}
		bad := get(t, h, studio.ObjectsPath+"?q="+strings.Repeat("x", cks.MaxSearchText+1))
		wantHTML(t, bad, http.StatusBadRequest)
		mustContain(t, "long q", bad.body, `role="alert"`, "q:")
		// Paging: 50 a page, the next page's link keeps the filters.
		first := get(t, h, studio.ObjectsPath+"?kind=claim")
		next := regexp.MustCompile(`href="(/objects\?[^"]*cursor=\d+[^"]*)">Next page`).FindStringSubmatch(first.body)
		rows := strings.Count(first.body, "data-object-row=")
		if rows >= 50 && next == nil {
			t.Errorf("a full page of %d claims without a next page", rows)
		}
		if next != nil {
			mustContain(t, "next link", next[1], "kind=claim")
			r := get(t, h, strings.ReplaceAll(next[1], "&amp;", "&"))
			wantHTML(t, r, http.StatusOK)
		}
	})
}

// TestObjectPage: a resolved question's page shows its four steps done,
// the answer with numbered citations and the passages they cite, the
// transition chain with each step's agent and status change and the
// critique's verdicts and the Arbiter's rationale expanded in place with
// their edges, and the version DAG; an unknown object is a 404 that says
// where to look.
func TestObjectPage(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend.Backend) {
		q := ask(t, b, "How does cks stop a running task?")
		h := knowledgeStudio(b)
		r := get(t, h, fmt.Sprintf("/objects/%d", q))
		wantHTML(t, r, http.StatusOK)
		mustContain(t, "question page", r.body,
			fmt.Sprintf("<title>Question %d · cks studio</title>", q),
			`data-live-fragment="/studio/objects/`, "data-live-done",
			`data-step="researcher" data-step-state="done"`, `data-step="arbiter" data-step-state="done"`,
			`data-answer`, `aria-label="citation 1"`, `id="cite-`, "stopping-tasks.md",
			`data-agent="researcher"`, `data-agent="critic"`, `data-agent="synthesizer"`, `data-agent="arbiter"`,
			"awaiting_critique</span>", "→", `class="timeline__node" open`, "accepted</span>", "supports",
			"Validated by the Arbiter", `<svg class="dag"`, `data-version="1"`)
		if n := strings.Count(r.body, `<sup class="cite">`); n < 2 {
			t.Errorf("the answer has %d citation marks, want at least 2", n)
		}
		// The live part alone, as the page script fetches it.
		frag := get(t, h, fmt.Sprintf("%s%d", studio.ObjectFragmentPath, q))
		wantHTML(t, frag, http.StatusOK)
		if frag.header.Get("X-Studio-Fragment") != "object" || strings.Contains(frag.body, "<html") {
			t.Errorf("fragment: header %q, whole page %v", frag.header.Get("X-Studio-Fragment"), strings.Contains(frag.body, "<html"))
		}
		mustContain(t, "fragment", frag.body, `data-agent="arbiter"`)
		if strings.Contains(r.body, "data-log-archived") {
			t.Error("a question with its log says its log was archived")
		}
		// Once the retention sweeper archived its log the page still shows
		// the question, its status, and says where the transitions went.
		if n, err := b.Objects.ArchiveFinalLogs(backendtest.Ctx(t), time.Now().Add(time.Hour), 1000,
			func([]cks.TransitionEntry) error { return nil }); err != nil || n == 0 {
			t.Fatalf("ArchiveFinalLogs = %d, %v; want the resolved question's entries", n, err)
		}
		archived := get(t, h, fmt.Sprintf("/objects/%d", q))
		wantHTML(t, archived, http.StatusOK)
		mustContain(t, "question page after retention", archived.body, "data-log-archived", "CKS_RETENTION_KNOWLEDGE",
			fmt.Sprintf("<title>Question %d · cks studio</title>", q), "resolved")
		for _, target := range []string{"/objects/999999", "/objects/nope", "/studio/objects/999999"} {
			nf := get(t, h, target)
			wantHTML(t, nf, http.StatusNotFound)
			mustContain(t, target, nf.body, "No such object", `href="/objects"`)
		}
	})
}

// TestForkDiff: a forked object's diff lays its heads beside their merge
// base, field by field, marking what each head changed, added or left;
// once merged (with a rationale, as the Fork Resolution agent writes it)
// it shows the merge beside its parents and the rationale; an object that
// never forked says so.
func TestForkDiff(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend.Backend) {
		ctx := context.Background()
		id := forked(t, b)
		h := knowledgeStudio(b)
		page := get(t, h, fmt.Sprintf("/objects/%d", id))
		mustContain(t, "object page", page.body, "This object is forked now.", fmt.Sprintf(`href="/objects/%d/forks">Compare the heads`, id),
			"dag__node--head", `data-version="3"`)
		r := get(t, h, fmt.Sprintf("/objects/%d/forks", id))
		wantHTML(t, r, http.StatusOK)
		mustContain(t, "fork diff", r.body, `data-fork-state="forked"`, "2 heads",
			`data-column="1" data-role="merge base"`, `data-column="2" data-role="head"`, `data-column="3" data-role="head"`)
		rows := map[string]string{}
		for _, m := range regexp.MustCompile(`(?s)data-field="(\w+)">(.*?)</tr>`).FindAllStringSubmatch(r.body, -1) {
			rows[m[1]] = strings.Join(regexp.MustCompile(`data-state="(\w+)"`).FindAllString(m[2], -1), " ")
		}
		for field, want := range map[string]string{
			"text":   `data-state="base" data-state="changed" data-state="same"`,
			"source": `data-state="base" data-state="same" data-state="changed"`,
			"note":   `data-state="absent" data-state="absent" data-state="added"`,
			"tags":   `data-state="base" data-state="same" data-state="same"`,
		} {
			if rows[field] != want {
				t.Errorf("field %s: %s, want %s", field, rows[field], want)
			}
		}
		why := knowledge.Attachment{Object: knowledge.NewObject{Kind: cks.KindRationale, Title: "merge of 2 and 3",
			Content: []byte(`{"text":"kept both edits","conflicts":[]}`)}, BaseType: cks.BaseDependsOn, SemanticType: cks.SemResolves}
		if _, _, err := b.Objects.MergeVersions(ctx, id, []int64{2, 3},
			[]byte(`{"text":"the sky is blue by day","source":"b.md","tags":["x"],"note":"moved"}`), "fork_resolution", &why); err != nil {
			t.Fatal(err)
		}
		r = get(t, h, fmt.Sprintf("/objects/%d/forks", id))
		wantHTML(t, r, http.StatusOK)
		mustContain(t, "merged", r.body, `data-fork-state="merged"`, "version 4 merged versions 2 and 3",
			`data-column="4" data-role="merge"`, `data-column="2" data-role="merged head"`, "kept both edits", "Why it merged so",
			"dag__node--merge")
		never := ask(t, b, "How does cks stop a running task?")
		r = get(t, h, fmt.Sprintf("/objects/%d/forks", never))
		mustContain(t, "never forked", r.body, `data-fork-state="never"`, "has never forked")
	})
}

// TestResearchPage: the form is labelled; a principal who may not create
// objects sees the Ask button disabled with the reason; ?id= shows a
// question's progress (a parked one says why), and the progress fragment
// is the research block alone; a principal who may not read objects gets
// the 403 page.
func TestResearchPage(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend.Backend) {
		h := knowledgeStudio(b)
		r := get(t, h, studio.ResearchPath)
		wantHTML(t, r, http.StatusOK)
		mustContain(t, "research", r.body, "<title>Research · cks studio</title>", `<label for="r-question">Question</label>`,
			`<label for="r-corpus">`, "data-research-submit>Ask</button>", `id="live"`)
		mustNotContain(t, "research", r.body, "You may not ask")

		reader := as(t, b, cks.Grant{Resource: "/", Permission: auth.PermRead})
		r = getAs(t, h, studio.ResearchPath, reader)
		wantHTML(t, r, http.StatusOK)
		mustContain(t, "reader's research page", r.body, `data-research-submit disabled`, "You may not ask:", "create")

		id := ask(t, b, "How does cks stop a running task?")
		r = get(t, h, fmt.Sprintf("%s?id=%d", studio.ResearchPath, id))
		mustContain(t, "progress", r.body, fmt.Sprintf(`data-live-fragment="/studio/research/%d"`, id), "data-terminal", "data-answer")
		frag := get(t, h, fmt.Sprintf("%s%d", studio.ResearchFragmentPath, id))
		if frag.header.Get("X-Studio-Fragment") != "research" || strings.Contains(frag.body, "<html") {
			t.Errorf("research fragment: header %q", frag.header.Get("X-Studio-Fragment"))
		}

		parked := ask(t, b, "Qwzx vblorp frangible?")
		r = get(t, h, fmt.Sprintf("%s?id=%d", studio.ResearchPath, parked))
		mustContain(t, "parked", r.body, "data-parked", "Parked in needs_input", `data-step-state="parked"`)

		nobody := as(t, b, cks.Grant{Resource: "/tasks", Permission: auth.PermRead})
		r = getAs(t, h, studio.ObjectsPath, nobody)
		wantHTML(t, r, http.StatusForbidden)
		mustContain(t, "forbidden list", r.body, "read on /objects")
	})
}

// as returns a request decorator that authenticates as a new principal
// holding grants.
func as(t testing.TB, b *backend.Backend, grants ...cks.Grant) func(*http.Request) *http.Request {
	t.Helper()
	ctx := context.Background()
	_, tok, err := auth.CreateToken(ctx, b.Principals, nil, "viewer", grants)
	if err != nil {
		t.Fatal(err)
	}
	p, err := b.Principals.Authenticate(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	return func(r *http.Request) *http.Request {
		return r.WithContext(auth.WithPrincipal(r.Context(), b.Principals, p))
	}
}

// getAs is get with the request made by decorate's principal.
func getAs(t testing.TB, h http.Handler, target string, decorate func(*http.Request) *http.Request) response {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, decorate(httptest.NewRequest(http.MethodGet, target, nil)))
	body, err := io.ReadAll(rec.Result().Body)
	if err != nil {
		t.Fatalf("GET %s: read body: %v", target, err)
	}
	return response{status: rec.Code, header: rec.Result().Header, body: string(body)}
}
