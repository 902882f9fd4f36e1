package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/runtime/pipeline"
)

// startHubWith is startHub (`cks serve`) with env added to its environment.
func startHubWith(t testing.TB, env []string) *hubProc {
	t.Helper()
	return startHubEnv(t, "serve", env)
}

var submitted = regexp.MustCompile(`question (\d+) submitted`)

// questionID returns the id `cks research` printed.
func questionID(t testing.TB, r result) string {
	t.Helper()
	m := submitted.FindStringSubmatch(r.stdout + r.stderr)
	if m == nil {
		t.Fatalf("no question id in the output:\n%s\n%s", r.stdout, r.stderr)
	}
	return m[1]
}

func wantAll(t testing.TB, what, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("%s: no %q in\n%s", what, w, out)
		}
	}
}

// TestResearchCLI: with the pipeline in the hub (CKS_PIPELINE_IN_PROCESS)
// and with the hub plus a `cks agent pipeline` process, `cks research
// --wait` follows a question through the four transitions to an answer
// with citations of the shipped corpus (exit 0), follows an unanswerable one
// to needs_input with its reason (exit 4), and `cks object show` prints the
// chain with its reasoning.
func TestResearchCLI(t *testing.T) {
	for _, mode := range []string{"in-process", "agent process"} {
		t.Run(mode, func(t *testing.T) {
			var h *hubProc
			if mode == "in-process" {
				h = startHubWith(t, []string{"CKS_PIPELINE_IN_PROCESS=true"})
			} else {
				h = startHub(t, "serve")
				a := startAgent(t, nil, "pipeline", "--data-dir", string(h.dir), "--liveness-interval", "0.3", "--poll", "1s")
				a.waitLog(t, "pipeline running")
			}
			dir := string(h.dir)

			r := runCKS(t, nil, "research", "How does cks stop a running task?", "--wait", "--data-dir", dir)
			if r.code != 0 {
				t.Fatalf("research --wait: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			wantAll(t, "resolved question", r.stdout,
				"admin: created → awaiting_research",
				"researcher: researched → awaiting_critique (",
				"critic: critiqued → awaiting_synthesis (",
				"synthesizer: synthesized → awaiting_arbitration (",
				"arbiter: validated → resolved (",
				"Answer (question ", "Sources:", "[1] ")
			if !regexp.MustCompile(`\[1\] [a-z-]+\.md — .+ \([a-z-]+\.md#\d+\)`).MatchString(r.stdout) {
				t.Errorf("no numbered citation of a corpus file (FILE — Heading (FILE#N)):\n%s", r.stdout)
			}
			resolved := questionID(t, r)

			r = runCKS(t, nil, "research", "What is the boiling point of mercury on Venus?", "--wait", "--data-dir", dir)
			if r.code != 4 {
				t.Fatalf("unanswerable research --wait: exit %d, want 4\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			wantAll(t, "parked question", r.stdout, "critic: rejected → needs_research", "parked → needs_input",
				"Parked (question ", "parked after 3 rounds")
			wantAll(t, "parked question's stderr", r.stderr, "needs_input")
			parked := questionID(t, r)

			r = runCKS(t, nil, "object", "show", resolved, "--data-dir", dir)
			if r.code != 0 {
				t.Fatalf("object show: exit %d\n%s", r.code, r.stderr)
			}
			wantAll(t, "object show (resolved)", r.stdout, "question "+resolved+" · resolved", "Transition log:",
				"critic: critiqued → awaiting_synthesis", "critique #", "accepted claim #", "arbiter: validated → resolved",
				"rationale #", "Claims:", "cites ", "Synthesis #", "Sources:")
			r = runCKS(t, nil, "object", "show", parked, "--data-dir", dir)
			wantAll(t, "object show (parked)", r.stdout, "needs_input", "critic: rejected → needs_research",
				"critique #", "parked → needs_input", "parked after 3 rounds")

			// Rejected by the Arbiter: the whole chain, each rejection with its
			// rationale, in order.
			r = runCKS(t, nil, "research", "How does cks stop a running task on Kubernetes clusters with GPUs and quantum entanglement?",
				"--wait", "--data-dir", dir)
			if r.code != 4 {
				t.Fatalf("research (arbiter rejects): exit %d, want 4\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			rejected := questionID(t, r)
			r = runCKS(t, nil, "object", "show", rejected, "--data-dir", dir)
			wantInOrder(t, "object show (rejected by the arbiter)", r.stdout,
				"researcher: researched → awaiting_critique", "critic: critiqued → awaiting_synthesis", "critique #",
				"synthesizer: synthesized → awaiting_arbitration",
				"arbiter: rejected → needs_research  [round 1]", "rationale #", "fewer than half of the question's terms", "sent back to: research",
				"researcher: researched → awaiting_critique  [round 1]",
				"arbiter: rejected → needs_research  [round 2]", "rationale #",
				"arbiter: parked → needs_input", "parked after 3 rounds")

			r = runCKS(t, nil, "object", "show", resolved, "--json", "--data-dir", dir)
			var v cks.ObjectView
			if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.Status != cks.StatusResolved || len(v.Reasoning) == 0 {
				t.Fatalf("object show --json: %v, %+v\n%s", err, v.Status, r.stdout)
			}
			if r := runCKS(t, nil, "object", "list", "--kind", "question", "--data-dir", dir); r.code != 0 ||
				!strings.Contains(r.stdout, "resolved") || !strings.Contains(r.stdout, "needs_input") {
				t.Fatalf("object list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if r := runCKS(t, nil, "object", "show", "999999", "--data-dir", dir); r.code != 1 || !strings.Contains(r.stderr, "HTTP 404") {
				t.Fatalf("object show of an unknown id: exit %d %s", r.code, r.stderr)
			}

			if mode == "agent process" {
				// A question naming its own corpus is researched there.
				corpus, err := filepath.Abs("../../internal/runtime/pipeline/testdata/corpus")
				if err != nil {
					t.Fatal(err)
				}
				r = runCKS(t, nil, "research", "How does the waggle dance tell foragers the direction of the flowers?",
					"--corpus", "../../internal/runtime/pipeline/testdata/corpus", "--wait", "--json", "--data-dir", dir)
				if r.code != 0 {
					t.Fatalf("research --corpus: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
				}
				if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.Status != cks.StatusResolved {
					t.Fatalf("research --json: %v %s\n%s", err, v.Status, r.stdout)
				}
				var q pipeline.Question
				if err := json.Unmarshal(v.Content, &q); err != nil || q.Corpus != corpus {
					t.Fatalf("question content %s: want corpus %s", v.Content, corpus)
				}
				if !strings.Contains(r.stderr, "arbiter: validated → resolved") || (!strings.Contains(r.stderr, "bees.md") && !strings.Contains(r.stdout, "bees.md")) {
					t.Fatalf("progress or citations missing:\n%s\n%s", r.stdout, r.stderr)
				}
			}
		})
	}
}

// TestResearchBadInput: a corpus that does not exist, and a pipeline agent
// with a missing corpus or a bad model setting are usage errors (exit 2)
// that say what is wrong; an empty or too long question is the hub's to
// refuse (exit 1, in the words of submit_research).
func TestResearchBadInput(t *testing.T) {
	h := startHub(t, "serve")
	for _, c := range []struct{ question, want string }{
		{"  ", "cks: invalid question: expected a non-empty question (invalid_argument, HTTP 400)\n"},
		{strings.Repeat("why ", 600), "cks: invalid question: expected at most 2000 bytes of text (got 2400) (invalid_argument, HTTP 400)\n"},
	} {
		if r := runCKS(t, nil, "research", c.question, "--data-dir", string(h.dir)); r.code != 1 || r.stderr != c.want {
			t.Errorf("research %.20q: exit %d, stderr %q; want 1, %q", c.question, r.code, r.stderr, c.want)
		}
	}
	dir := t.TempDir()
	for _, c := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"research", "Why?", "--corpus", "/does/not/exist", "--data-dir", dir}, "/does/not/exist: directory does not exist"},
		{nil, []string{"research", "--data-dir", dir}, "exactly one QUESTION"},
		{nil, []string{"object", "show", "abc", "--data-dir", dir}, "object ID"},
		{nil, []string{"agent", "pipeline", "--corpus", "/does/not/exist", "--data-dir", dir}, "/does/not/exist"},
		{[]string{"CKS_PIPELINE_CORPUS=/does/not/exist"}, []string{"agent", "pipeline", "--data-dir", dir}, "CKS_PIPELINE_CORPUS"},
		{[]string{"CKS_LLM_PROVIDER=bogus"}, []string{"agent", "pipeline", "--data-dir", dir}, "CKS_LLM_PROVIDER"},
		{[]string{"CKS_PIPELINE_WORKERS=0"}, []string{"agent", "pipeline", "--data-dir", dir}, "CKS_PIPELINE_WORKERS"},
	} {
		r := runCKS(t, c.env, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v %v: exit %d, stderr %q; want 2 naming %q", c.env, c.args, r.code, r.stderr, c.want)
		}
	}
}

// wantInOrder fails unless out contains every part, each after the one before.
func wantInOrder(t testing.TB, what, out string, parts ...string) {
	t.Helper()
	rest := out
	for _, p := range parts {
		i := strings.Index(rest, p)
		if i < 0 {
			t.Fatalf("%s: %q missing (or out of order):\n%s", what, p, out)
		}
		rest = rest[i+len(p):]
	}
}

// TestResearchWaitWithoutPipeline (issue 39.11): against `cks serve` alone
// — no pipeline in the hub, no pipeline process — `cks research --wait`
// says at once that nothing would answer and how to start a pipeline, and
// submits nothing (on main it waited until its timeout); without --wait
// the question is queued; /healthz says whether the hub runs the pipeline.
func TestResearchWaitWithoutPipeline(t *testing.T) {
	h := startHub(t, "serve")
	dir := string(h.dir)
	r := runCKS(t, nil, "research", "How does cks stop a running task?", "--wait", "--timeout", "30s", "--data-dir", dir)
	if r.code != 1 || !strings.Contains(r.stderr, "no research pipeline runs") || !strings.Contains(r.stderr, "cks agent pipeline") ||
		!strings.Contains(r.stderr, "CKS_PIPELINE_IN_PROCESS=true") {
		t.Fatalf("research --wait without a pipeline: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var list struct {
		Objects []json.RawMessage `json:"objects"`
	}
	if code, body := h.get(t, "/v1/objects"); code != 200 || json.Unmarshal([]byte(body), &list) != nil || len(list.Objects) != 0 {
		t.Fatalf("the refused research --wait submitted a question: %d %s", code, body)
	}
	if _, body := h.get(t, "/healthz"); strings.Contains(body, "pipeline") {
		t.Fatalf("/healthz of a hub without the pipeline: %s", body)
	}
	if r := runCKS(t, nil, "research", "How does cks stop a running task?", "--data-dir", dir); r.code != 0 || !strings.Contains(r.stdout, "submitted") {
		t.Fatalf("research without --wait: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	in := startHubWith(t, []string{"CKS_PIPELINE_IN_PROCESS=true"})
	if _, body := in.get(t, "/healthz"); !strings.Contains(body, `"pipeline":"in_process"`) {
		t.Fatalf("/healthz of a hub running the pipeline: %s", body)
	}
}
