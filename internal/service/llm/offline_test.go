package llm

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

// runOffline takes a question through research → critique → synthesize →
// validate with the offline model, the way the pipeline does: the
// Researcher searches the corpus, the Synthesizer gets the accepted claims.
func runOffline(t *testing.T, c *Corpus, question string) (CritiqueOutput, SynthesisOutput, ValidationOutput, []Claim) {
	t.Helper()
	ctx := context.Background()
	m := NewOffline()
	passages := c.Search(question, 5)
	r, err := m.Research(ctx, ResearchInput{Question: question, Passages: passages})
	if err != nil {
		t.Fatal(err)
	}
	cr, err := m.Critique(ctx, CritiqueInput{Question: question, Claims: r.Claims, Passages: passages})
	if err != nil {
		t.Fatal(err)
	}
	var accepted []Claim
	for _, v := range cr.Verdicts {
		if v.Accept {
			accepted = append(accepted, r.Claims[v.Claim])
		}
	}
	s, err := m.Synthesize(ctx, SynthesisInput{Question: question, Claims: accepted})
	if err != nil {
		t.Fatal(err)
	}
	v, err := m.Validate(ctx, ValidationInput{Question: question, Answer: s.Answer, Citations: s.Citations, Claims: accepted})
	if err != nil {
		t.Fatal(err)
	}
	return cr, s, v, accepted
}

func TestOfflineOnShippedCorpus(t *testing.T) {
	c, err := LoadCorpus("../../base/corpus")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		question string
		source   string // a file one of the citations must come from
	}{
		{"How does cks stop a running task?", "stopping-tasks.md"},
		{"What happens when an agent process misses its heartbeats?", "agent-liveness.md"},
		{"How do sweepers stop across nodes?", "sweepers.md"},
		{"What is the dispatch exclusion set?", "dispatch-exclusion.md"},
		{"How does an operator stop an agent process?", "process-stop.md"},
		{"Why does a step claim an object before running the model?", "research-pipeline.md"},
	} {
		t.Run(tc.question, func(t *testing.T) {
			cr, s, v, _ := runOffline(t, c, tc.question)
			if !cr.Sufficient {
				t.Fatalf("critique insufficient: %+v", cr)
			}
			if !v.Valid {
				t.Fatalf("not valid: %+v\nanswer: %s", v, s.Answer)
			}
			found := false
			for _, id := range s.Citations {
				if _, ok := c.passage(id); !ok {
					t.Fatalf("cites unknown passage %s", id)
				}
				if strings.HasPrefix(id, tc.source+"#") {
					found = true
				}
				if !strings.Contains(s.Answer, "["+id+"]") {
					t.Fatalf("answer has no marker for %s: %s", id, s.Answer)
				}
			}
			if !found {
				t.Fatalf("no citation from %s: %v", tc.source, s.Citations)
			}
			t.Logf("answer: %s\nrationale: %s", s.Answer, v.Rationale)
		})
	}

	// Topics the corpus does not cover go back to research, so the
	// pipeline's bounded rounds park them.
	for _, q := range []string{
		"What is the boiling point of mercury on Venus?",
		"How does cks schedule GPU jobs on Kubernetes clusters?",
	} {
		t.Run(q, func(t *testing.T) {
			_, s, v, _ := runOffline(t, c, q)
			if v.Valid || v.SendBackTo != BackToResearch {
				t.Fatalf("validation = %+v, want invalid → research\nanswer: %s", v, s.Answer)
			}
			t.Logf("answer: %q\nrationale: %s", s.Answer, v.Rationale)
		})
	}
}

func TestOfflineDeterministic(t *testing.T) {
	c, err := LoadCorpus("../../base/corpus")
	if err != nil {
		t.Fatal(err)
	}
	q := "How does cks stop a running task?"
	_, s1, v1, c1 := runOffline(t, c, q)
	for range 5 {
		_, s2, v2, c2 := runOffline(t, c, q)
		if !reflect.DeepEqual(s1, s2) || !reflect.DeepEqual(v1, v2) || !reflect.DeepEqual(c1, c2) {
			t.Fatal("offline model is not deterministic")
		}
	}
}

func TestOfflineResearch(t *testing.T) {
	ps := []Passage{
		{ID: "a#1", Text: "Leases expire. A task lease is renewed by a heartbeat. Unrelated words."},
		{ID: "a#2", Text: "Nothing relevant here at all."},
		{ID: "a#3", Text: "- A task lease is renewed by a heartbeat.\n- Other item."}, // duplicate sentence
		{ID: "a#4", Text: "The heartbeat keeps it. The lease heartbeat keeps a task."},
	}
	out, err := NewOffline().Research(context.Background(), ResearchInput{Question: "How is a task lease renewed?", Passages: ps})
	if err != nil {
		t.Fatal(err)
	}
	want := []Claim{
		{Text: "A task lease is renewed by a heartbeat.", Citations: []string{"a#1"}},
		{Text: "The lease heartbeat keeps a task.", Citations: []string{"a#4"}},
	}
	if !reflect.DeepEqual(out.Claims, want) {
		t.Fatalf("claims = %+v, want %+v", out.Claims, want)
	}

	var many []Passage
	for i := range 9 {
		many = append(many, Passage{ID: "m#" + string(rune('1'+i)), Text: "Lease number " + string(rune('a'+i)) + " is a lease."})
	}
	out, _ = NewOffline().Research(context.Background(), ResearchInput{Question: "lease", Passages: many})
	if len(out.Claims) != 5 {
		t.Fatalf("%d claims, want at most 5", len(out.Claims))
	}
	out, _ = NewOffline().Research(context.Background(), ResearchInput{Question: "lease"})
	if out.Claims == nil || len(out.Claims) != 0 {
		t.Fatalf("no passages: %+v", out)
	}
}

func TestOfflineCritique(t *testing.T) {
	ps := []Passage{{ID: "p#1"}, {ID: "p#2"}}
	claims := []Claim{
		{Text: "A task lease lasts five minutes.", Citations: []string{"p#1"}},
		{Text: "A task lease lasts five minutes.", Citations: []string{"elsewhere#1"}},
		{Text: "Bananas are yellow.", Citations: []string{"p#2"}},
		{Text: "A lease.", Citations: nil},
		{Text: "Leases and tasks.", Citations: []string{"elsewhere#2", "p#2"}},
	}
	out, err := NewOffline().Critique(context.Background(), CritiqueInput{Question: "How long is a task lease?", Claims: claims, Passages: ps})
	if err != nil {
		t.Fatal(err)
	}
	wantAccept := []bool{true, false, false, false, true}
	wantReason := []string{"shares the question's terms lease, task", "none of the given passages", "shares no term", "cites no passage", "cites p#2 and"}
	for i, v := range out.Verdicts {
		if v.Claim != i || v.Accept != wantAccept[i] || !strings.Contains(v.Reason, wantReason[i]) {
			t.Errorf("verdict %d = %+v, want accept %v, reason with %q", i, v, wantAccept[i], wantReason[i])
		}
	}
	if !out.Sufficient || !strings.Contains(out.Summary, "2 of 5") {
		t.Fatalf("sufficient/summary = %v %q", out.Sufficient, out.Summary)
	}
	out, _ = NewOffline().Critique(context.Background(), CritiqueInput{Question: "How long is a task lease?", Claims: claims[1:4], Passages: ps})
	if out.Sufficient {
		t.Fatal("sufficient with nothing accepted")
	}
}

func TestOfflineSynthesize(t *testing.T) {
	claims := []Claim{
		{Text: "A lease exists.", Citations: []string{"p#1"}},
		{Text: "A task lease lasts five minutes.", Citations: []string{"p#2", "p#1"}},
		{Text: "Tasks have leases", Citations: []string{"p#3"}},
		{Text: "Something about a lease", Citations: []string{"p#4"}},
	}
	out, err := NewOffline().Synthesize(context.Background(), SynthesisInput{Question: "How long is a task lease?", Claims: claims})
	if err != nil {
		t.Fatal(err)
	}
	wantAnswer := "A task lease lasts five minutes [p#2] [p#1]. Tasks have leases [p#3]. A lease exists [p#1]."
	if out.Answer != wantAnswer {
		t.Fatalf("answer = %q, want %q", out.Answer, wantAnswer)
	}
	if !reflect.DeepEqual(out.Citations, []string{"p#2", "p#1", "p#3"}) {
		t.Fatalf("citations = %v", out.Citations)
	}
	out, _ = NewOffline().Synthesize(context.Background(), SynthesisInput{Question: "q"})
	if out.Answer != "" || len(out.Citations) != 0 {
		t.Fatalf("no claims: %+v", out)
	}
}

func TestOfflineValidate(t *testing.T) {
	claims := []Claim{
		{Text: "A task lease lasts five minutes.", Citations: []string{"p#1"}},
		{Text: "The lease reaper reclaims it.", Citations: []string{"p#2"}},
	}
	q := "How long does a task lease last before the reaper reclaims it?"
	for _, tc := range []struct {
		name      string
		in        ValidationInput
		valid     bool
		back      string
		rationale string
	}{
		{"valid", ValidationInput{Question: q, Answer: "A task lease lasts five minutes [p#1].", Citations: []string{"p#1"}, Claims: claims},
			true, "", "cover 5 of the question's 6 terms"},
		{"marker only", ValidationInput{Question: q, Answer: "It lasts five minutes [p#2].", Claims: claims},
			true, "", "cites 1 passage"},
		{"no claims", ValidationInput{Question: q, Answer: "x [p#1]", Citations: []string{"p#1"}},
			false, BackToResearch, "no claims"},
		{"empty answer", ValidationInput{Question: q, Answer: "  ", Claims: claims},
			false, BackToSynthesis, "empty"},
		{"cites nothing", ValidationInput{Question: q, Answer: "A task lease lasts five minutes.", Claims: claims},
			false, BackToSynthesis, "cites no passage"},
		{"foreign citation", ValidationInput{Question: q, Answer: "A lease [p#1].", Citations: []string{"p#1", "p#9"}, Claims: claims},
			false, BackToSynthesis, "p#9"},
		{"foreign marker", ValidationInput{Question: q, Answer: "A lease [p#1] [other.md#3].", Citations: []string{"p#1"}, Claims: claims},
			false, BackToSynthesis, "other.md#3"},
		{"low coverage", ValidationInput{Question: "What colour are zeppelins, bananas and tasks?", Answer: "Tasks [p#1].", Citations: []string{"p#1"}, Claims: claims},
			false, BackToResearch, "1 of the question's 4 terms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := NewOffline().Validate(context.Background(), tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if v.Valid != tc.valid || v.SendBackTo != tc.back || !strings.Contains(v.Rationale, tc.rationale) {
				t.Fatalf("got %+v, want valid %v back %q rationale with %q", v, tc.valid, tc.back, tc.rationale)
			}
		})
	}
}

func TestOfflineHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m := NewOffline()
	if m.Name() != "offline" {
		t.Fatal(m.Name())
	}
	if _, err := m.Research(ctx, ResearchInput{}); err == nil {
		t.Fatal("Research ignored a done ctx")
	}
	if _, err := m.Critique(ctx, CritiqueInput{}); err == nil {
		t.Fatal("Critique ignored a done ctx")
	}
	if _, err := m.Synthesize(ctx, SynthesisInput{}); err == nil {
		t.Fatal("Synthesize ignored a done ctx")
	}
	if _, err := m.Validate(ctx, ValidationInput{}); err == nil {
		t.Fatal("Validate ignored a done ctx")
	}
}
