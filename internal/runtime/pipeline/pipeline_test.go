package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/base/events"
	"github.com/cks-dev/cks/internal/runtime/pipeline"
	"github.com/cks-dev/cks/internal/service/knowledge"
	"github.com/cks-dev/cks/internal/service/llm"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// questions resolve against testdata/corpus in one round with the offline model.
var questions = []string{
	"How does the waggle dance tell foragers the direction of the flowers?",
	"What causes spring tides when the sun and the moon line up?",
	"Why are stratovolcanoes eruptions explosive?",
	"What does the duration of the waggle run tell about the distance to the flowers?",
}

// absent is a question the corpus cannot answer.
const absent = "Which programming language did the first compiler target?"

func corpus(t testing.TB) *llm.Corpus {
	t.Helper()
	c, err := llm.LoadCorpus("testdata/corpus")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// counting wraps a model, counts its calls per method and question, and can
// inject faults: fault is called before each call and may panic or return an
// error to return instead.
type counting struct {
	llm.Model
	mu    sync.Mutex
	calls map[string]int
	fault func(method, question string, n int) error
}

func newCounting(fault func(method, question string, n int) error) *counting {
	return &counting{Model: llm.NewOffline(), calls: map[string]int{}, fault: fault}
}

func (c *counting) count(method, question string) error {
	c.mu.Lock()
	c.calls[method+"|"+question]++
	n := c.calls[method+"|"+question]
	c.mu.Unlock()
	if c.fault != nil {
		return c.fault(method, question, n)
	}
	return nil
}

func (c *counting) n(method, question string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[method+"|"+question]
}

func (c *counting) Research(ctx context.Context, in llm.ResearchInput) (llm.ResearchOutput, error) {
	if err := c.count("research", in.Question); err != nil {
		return llm.ResearchOutput{}, err
	}
	return c.Model.Research(ctx, in)
}

func (c *counting) Critique(ctx context.Context, in llm.CritiqueInput) (llm.CritiqueOutput, error) {
	if err := c.count("critique", in.Question); err != nil {
		return llm.CritiqueOutput{}, err
	}
	return c.Model.Critique(ctx, in)
}

func (c *counting) Synthesize(ctx context.Context, in llm.SynthesisInput) (llm.SynthesisOutput, error) {
	if err := c.count("synthesize", in.Question); err != nil {
		return llm.SynthesisOutput{}, err
	}
	return c.Model.Synthesize(ctx, in)
}

func (c *counting) Validate(ctx context.Context, in llm.ValidationInput) (llm.ValidationOutput, error) {
	if err := c.count("validate", in.Question); err != nil {
		return llm.ValidationOutput{}, err
	}
	return c.Model.Validate(ctx, in)
}

// submit creates a question awaiting research.
func submit(t testing.TB, k *knowledge.Service, q string) cks.Object {
	t.Helper()
	obj, err := k.CreateObject(context.Background(), knowledge.NewObject{Kind: cks.KindQuestion, Title: q,
		Content: []byte(fmt.Sprintf(`{"question": %q}`, q)), Status: cks.StatusAwaitingResearch, CreatedBy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// start starts an orchestrator until the test ends.
func start(t testing.TB, cfg pipeline.Config) {
	t.Helper()
	o, err := pipeline.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := o.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
}

// settle waits until every id is terminal and returns them with log and edges.
func settle(t testing.TB, k pipeline.Store, ids ...int64) []cks.Object {
	t.Helper()
	// The wait ends in failure only when the pipeline stops moving: every
	// step writes objects (claims, critiques, syntheses, rationales), so a
	// new object id is progress. A fixed deadline would fail a slow but
	// working run on a loaded machine.
	const stall = 2 * time.Minute
	var newest int64
	progressed := func() bool {
		page, err := k.ListObjects(context.Background(), cks.ObjectFilter{After: newest, Limit: cks.MaxListLimit})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Objects) == 0 {
			return false
		}
		newest = page.Objects[len(page.Objects)-1].ID
		return true
	}
	progressed()
	deadline := time.Now().Add(stall)
	out := make([]cks.Object, len(ids))
	for i, id := range ids {
		for {
			o, err := k.GetObject(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if pipeline.Terminal(o.Status) {
				out[i] = o
				break
			}
			if progressed() {
				deadline = time.Now().Add(stall)
			}
			if time.Now().After(deadline) {
				t.Fatalf("object %d still %s (round %d) and nothing written for %s; log %+v", id, o.Status, o.Round, stall, o.Log)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return out
}

// chain renders an object's log as "agent:action→status" steps.
func chain(o cks.Object) string {
	var parts []string
	for _, e := range o.Log {
		parts = append(parts, e.Agent+":"+e.Action+"→"+e.TransitionedTo)
	}
	return strings.Join(parts, " ")
}

const resolvedChain = "test:created→awaiting_research researcher:researched→awaiting_critique " +
	"critic:critiqued→awaiting_synthesis synthesizer:synthesized→awaiting_arbitration arbiter:validated→resolved"

// synthesis returns the synthesis linked to q.
func synthesis(t testing.TB, k pipeline.Store, q cks.Object) pipeline.SynthesisContent {
	t.Helper()
	for _, e := range q.Edges {
		if e.Dst == q.ID && e.SemanticType == cks.SemSynthesizes {
			o, err := k.GetObject(context.Background(), e.Src)
			if err != nil {
				t.Fatal(err)
			}
			var sc pipeline.SynthesisContent
			if err := jsonUnmarshal(o.Content, &sc); err != nil {
				t.Fatal(err)
			}
			return sc
		}
	}
	t.Fatalf("question %d has no synthesis", q.ID)
	return pipeline.SynthesisContent{}
}

// TestResolvesQuestions: questions the corpus answers go through the four
// steps, concurrently (two workers per step), each ending resolved with a
// cited synthesis, its log the full chain, and the steps' events published.
func TestResolvesQuestions(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		k := open(t)
		bus := &events.Bus{}
		evs, unsub := bus.Subscribe()
		var started, completed atomic.Int32
		go func() {
			for e := range evs {
				switch e.Type {
				case events.AgentStepStarted:
					started.Add(1)
				case events.AgentStepCompleted:
					completed.Add(1)
				}
			}
		}()
		defer unsub()
		start(t, pipeline.Config{Store: k.Objects, Changes: k.Changes, Model: llm.NewOffline(), Corpus: corpus(t), Workers: 2, Bus: bus})
		var ids []int64
		for _, q := range questions {
			ids = append(ids, submit(t, k.Objects, q).ID)
		}
		for i, o := range settle(t, k.Objects, ids...) {
			if o.Status != cks.StatusResolved || chain(o) != resolvedChain {
				t.Errorf("%q: %s, chain %s", questions[i], o.Status, chain(o))
				continue
			}
			sc := synthesis(t, k.Objects, o)
			if sc.Answer == "" || len(sc.Citations) == 0 || len(sc.ClaimIDs) == 0 {
				t.Errorf("%q: synthesis %+v", questions[i], sc)
			}
			for _, e := range o.Log[2:] {
				if e.Action != "synthesized" && e.ReasoningNodeID == nil {
					t.Errorf("%q: %s's entry has no reasoning node", questions[i], e.Agent)
				}
			}
		}
		// The completion event follows the transition's commit: wait for it.
		want := int32(4 * len(questions))
		deadline := time.Now().Add(time.Minute)
		for started.Load() < want || completed.Load() < want {
			if time.Now().After(deadline) {
				t.Fatalf("events: %d started, %d completed; want at least %d each", started.Load(), completed.Load(), want)
			}
			time.Sleep(time.Millisecond)
		}
	})
}

// slowResearcher is the researcher, taking took of its fake clock.
type slowResearcher struct {
	pipeline.Researcher
	c    *clock.Fake
	took time.Duration
}

func (r slowResearcher) Run(ctx context.Context, env *pipeline.Env, obj cks.Object) (pipeline.Outcome, error) {
	r.c.Advance(r.took)
	return r.Researcher.Run(ctx, env, obj)
}

// TestStepEventsUseTheClock: a step's events carry the time of the
// orchestrator's clock and the step's duration measured on it.
func TestStepEventsUseTheClock(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		k := open(t)
		c := clock.NewFake(backendtest.T0)
		bus := &events.Bus{}
		evs, unsub := bus.Subscribe()
		defer unsub()
		steps := pipeline.Steps()
		steps[0] = slowResearcher{c: c, took: 1500 * time.Millisecond}
		o, err := pipeline.New(pipeline.Config{Store: k.Objects, Changes: k.Changes, Model: llm.NewOffline(), Corpus: corpus(t), Steps: steps, Clock: c, Bus: bus})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := o.RunSequential(context.Background(), submit(t, k.Objects, questions[0]).ID); err != nil {
			t.Fatal(err)
		}
		started, completed := <-evs, <-evs
		se, ce := started.Data.(events.StepEvent), completed.Data.(events.StepEvent)
		if started.Type != events.AgentStepStarted || se.Step != "researcher" || !started.At.Equal(backendtest.T0) {
			t.Fatalf("first event %s %+v at %v, want the researcher's start at %v", started.Type, se, started.At, backendtest.T0)
		}
		if completed.Type != events.AgentStepCompleted || ce.Step != "researcher" || ce.DurationMS != 1500 ||
			!completed.At.Equal(backendtest.T0.Add(1500*time.Millisecond)) {
			t.Fatalf("second event %s %+v at %v, want the researcher done in 1500 ms", completed.Type, ce, completed.At)
		}
	})
}

// TestSequential drives one question end to end.
func TestSequential(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		k := open(t)
		o, err := pipeline.New(pipeline.Config{Store: k.Objects, Changes: k.Changes, Model: llm.NewOffline(), Corpus: corpus(t)})
		if err != nil {
			t.Fatal(err)
		}
		q := submit(t, k.Objects, questions[1])
		got, err := o.RunSequential(context.Background(), q.ID)
		if err != nil || got.Status != cks.StatusResolved || chain(got) != resolvedChain {
			t.Fatalf("%s, %v: %s", got.Status, err, chain(got))
		}
	})
}

// TestParksAfterRounds: a question the corpus cannot answer is sent back
// with reasons and parked in needs_input after MaxRounds, never looping.
func TestParksAfterRounds(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		k := open(t)
		start(t, pipeline.Config{Store: k.Objects, Changes: k.Changes, Model: llm.NewOffline(), Corpus: corpus(t), MaxRounds: 2})
		o := settle(t, k.Objects, submit(t, k.Objects, absent).ID)[0]
		if o.Status != cks.StatusNeedsInput || o.Round != 1 {
			t.Fatalf("%s round %d: %s", o.Status, o.Round, chain(o))
		}
		last := o.Log[len(o.Log)-1]
		if last.Action != pipeline.ActionParked || last.ReasoningNodeID == nil {
			t.Fatalf("last entry %+v", last)
		}
		why, err := k.Objects.GetObject(context.Background(), *last.ReasoningNodeID)
		if err != nil || !strings.Contains(string(why.Content), "parked after 2 rounds") {
			t.Fatalf("parking reason %s, %v", why.Content, err)
		}
		rejections := 0
		for _, e := range o.Log {
			if e.Action == "rejected" {
				rejections++
				if e.ReasoningNodeID == nil {
					t.Errorf("rejection without its reasoning: %+v", e)
				}
			}
		}
		if rejections != 1 {
			t.Fatalf("%d rejections before parking, want 1: %s", rejections, chain(o))
		}
	})
}

// TestModelRunsOncePerObject: with several workers per step under the one
// claim discipline, and duplicate wake-ups from every transition, no step
// ever asks the model twice about one question (150 questions: four
// workers per step keep racing for each status through the whole run; 500
// took five minutes of CI under -race and showed nothing more).
func TestModelRunsOncePerObject(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		k := open(t)
		m := newCounting(nil)
		const n = 150
		var ids []int64
		for i := range n {
			ids = append(ids, submit(t, k.Objects, fmt.Sprintf("%s (#%d)", questions[i%len(questions)], i)).ID)
		}
		// Two orchestrators (as two processes would), two workers per step each.
		for i := range 2 {
			nd := open(t)
			start(t, pipeline.Config{Store: nd.Objects, Changes: nd.Changes, Model: m, Corpus: corpus(t), Workers: 2, Name: fmt.Sprintf("node%d", i)})
		}
		for i, o := range settle(t, k.Objects, ids...) {
			if o.Status != cks.StatusResolved {
				t.Fatalf("question %d: %s: %s", i, o.Status, chain(o))
			}
		}
		for i := range n {
			q := fmt.Sprintf("%s (#%d)", questions[i%len(questions)], i)
			for _, method := range []string{"research", "critique", "synthesize", "validate"} {
				if c := m.n(method, q); c != 1 {
					t.Fatalf("%s was asked %d times about question %d", method, c, i)
				}
			}
		}
	})
}

// TestPanickingStepIsRestarted: a step that panics is restarted by the
// orchestrator and the question still resolves.
func TestPanickingStepIsRestarted(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		k := open(t)
		m := newCounting(func(method, _ string, n int) error {
			if method == "critique" && n == 1 {
				panic("critic crashed")
			}
			return nil
		})
		start(t, pipeline.Config{Store: k.Objects, Changes: k.Changes, Model: m, Corpus: corpus(t)})
		o := settle(t, k.Objects, submit(t, k.Objects, questions[0]).ID)[0]
		if o.Status != cks.StatusResolved || chain(o) != resolvedChain || m.n("critique", questions[0]) != 2 {
			t.Fatalf("%s after a panic (%d critiques): %s", o.Status, m.n("critique", questions[0]), chain(o))
		}
	})
}

// TestRedeliveryCallsNoModel: an object re-delivered to a step that already
// completed it (same content, same round) is moved on without a model call.
func TestRedeliveryCallsNoModel(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		k := open(t)
		m := newCounting(nil)
		o, err := pipeline.New(pipeline.Config{Store: k.Objects, Changes: k.Changes, Model: m, Corpus: corpus(t)})
		if err != nil {
			t.Fatal(err)
		}
		q := submit(t, k.Objects, questions[2])
		if _, err := o.RunSequential(context.Background(), q.ID); err != nil {
			t.Fatal(err)
		}
		// Put it back to awaiting_critique as a stale redelivery would:
		// same content, same round.
		c, err := k.Objects.ClaimObject(context.Background(), q.ID, "test", []string{cks.StatusResolved})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := k.Objects.TransitionObject(context.Background(), q.ID, c.ClaimToken, knowledge.ObjectTransition{
			From: cks.StatusResolved, To: cks.StatusAwaitingCritique, Action: "redelivered", Agent: "test", Reasoning: -1}); err != nil {
			t.Fatal(err)
		}
		got, err := o.RunSequential(context.Background(), q.ID)
		if err != nil || got.Status != cks.StatusResolved {
			t.Fatalf("%s, %v", got.Status, err)
		}
		for _, method := range []string{"critique", "synthesize", "validate"} {
			if n := m.n(method, questions[2]); n != 1 {
				t.Errorf("%s called %d times", method, n)
			}
		}
		if !strings.Contains(chain(got), "critic:replayed→awaiting_synthesis") {
			t.Fatalf("chain %s", chain(got))
		}
	})
}

// TestUnusableReplies: an unusable reply is kept as a reasoning node and
// logged as the step's failure, the question is retried; a step that keeps
// getting unusable replies parks it.
func TestUnusableReplies(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		k := open(t)
		m := newCounting(func(method, q string, n int) error {
			if method == "synthesize" && (n == 1 || strings.HasPrefix(q, "always")) {
				return &llm.ReplyError{Raw: "I think the answer is bees", Err: errors.New("not JSON")}
			}
			return nil
		})
		start(t, pipeline.Config{Store: k.Objects, Changes: k.Changes, Model: m, Corpus: corpus(t), MaxFailures: 2})
		once := submit(t, k.Objects, questions[3])
		always := submit(t, k.Objects, "always "+questions[3])
		got := settle(t, k.Objects, once.ID, always.ID)
		if got[0].Status != cks.StatusResolved || !strings.Contains(chain(got[0]), "synthesizer:failed→awaiting_synthesis synthesizer:synthesized") {
			t.Fatalf("once: %s: %s", got[0].Status, chain(got[0]))
		}
		var failed cks.TransitionEntry
		for _, e := range got[0].Log {
			if e.Action == pipeline.ActionFailed {
				failed = e
			}
		}
		reply, err := k.Objects.GetObject(context.Background(), *failed.ReasoningNodeID)
		if err != nil || reply.Kind != cks.KindModelReply || !strings.Contains(string(reply.Content), "I think the answer is bees") {
			t.Fatalf("kept reply %+v, %v", reply, err)
		}
		if got[1].Status != cks.StatusNeedsInput || !strings.HasSuffix(chain(got[1]), "synthesizer:failed→awaiting_synthesis synthesizer:failed→awaiting_synthesis synthesizer:parked→needs_input") {
			t.Fatalf("always: %s: %s", got[1].Status, chain(got[1]))
		}
	})
}

// TestModelDown: while the model is unreachable the claim is given back
// (no log entry, nothing lost) and the step backs off; then it resolves.
func TestModelDown(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		k := open(t)
		m := newCounting(func(method, _ string, n int) error {
			if method == "research" && n <= 2 {
				return fmt.Errorf("connect: %w", llm.ErrUnavailable)
			}
			return nil
		})
		start(t, pipeline.Config{Store: k.Objects, Changes: k.Changes, Model: m, Corpus: corpus(t)})
		o := settle(t, k.Objects, submit(t, k.Objects, questions[0]).ID)[0]
		if o.Status != cks.StatusResolved || chain(o) != resolvedChain || m.n("research", questions[0]) != 3 {
			t.Fatalf("%s after %d research calls: %s", o.Status, m.n("research", questions[0]), chain(o))
		}
	})
}

// TestFallbackPoll: with notifications off, the poll alone moves questions:
// the workers wait one Poll of the orchestrator's clock between claims, and
// a question submitted while they wait moves only when the poll comes round.
func TestFallbackPoll(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		k := open(t)
		c := clock.NewFake(backendtest.T0)
		const poll = time.Minute
		start(t, pipeline.Config{Store: k.Objects, Changes: k.Changes, Model: llm.NewOffline(), Corpus: corpus(t), NoNotify: true, Poll: poll,
			ClaimTouch: time.Hour, Clock: c})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		steps := len(pipeline.Steps())
		if err := c.WaitArmed(ctx, steps); err != nil { // every worker waits on its poll
			t.Fatal(err)
		}
		q := submit(t, k.Objects, questions[1])
		polls := 0
		for {
			o, err := k.Objects.GetObject(ctx, q.ID)
			if err != nil {
				t.Fatal(err)
			}
			if polls == 0 && o.Status != cks.StatusAwaitingResearch {
				t.Fatalf("%s before any poll: the workers did not wait", o.Status)
			}
			if pipeline.Terminal(o.Status) {
				if o.Status != cks.StatusResolved {
					t.Fatalf("%s: %s", o.Status, chain(o))
				}
				break
			}
			// Each step moves it on the poll after it reached the step's
			// status; wait until every worker is waiting again, then poll.
			if err := c.WaitArmed(ctx, steps); err != nil {
				t.Fatalf("after %d polls the workers are not waiting (object %s): %v", polls, o.Status, err)
			}
			c.Advance(poll)
			polls++
		}
		// The question moved only on polls (nothing before the first). How
		// many it took is not fixed: a later step may take it in the same
		// poll, when its query runs after the earlier step's commit.
		if polls == 0 {
			t.Fatal("resolved without a poll")
		}
	})
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// touchCounting counts claim renewals and, once lost is set, answers them
// as a claim taken over (cks.ErrLeaseLost).
type touchCounting struct {
	pipeline.Store
	touches atomic.Int32
	lost    atomic.Bool
}

func (s *touchCounting) TouchClaim(ctx context.Context, id int64, token string) error {
	s.touches.Add(1)
	if s.lost.Load() {
		return fmt.Errorf("object %d: %w", id, cks.ErrLeaseLost)
	}
	return s.Store.TouchClaim(ctx, id, token)
}

// blocking is a step that runs until its context ends and returns the cause.
type blocking struct{ entered chan struct{} }

func (blocking) Name() string     { return "researcher" }
func (blocking) Claims() []string { return []string{cks.StatusAwaitingResearch} }
func (b blocking) Run(ctx context.Context, _ *pipeline.Env, _ cks.Object) (pipeline.Outcome, error) {
	close(b.entered)
	<-ctx.Done()
	return pipeline.Outcome{}, context.Cause(ctx)
}

// TestClaimTouch: a running step's claim is renewed every ClaimTouch of the
// orchestrator's clock, and a renewal that finds the claim lost cancels the
// step with cks.ErrLeaseLost as the cause (the claim's lease.Keeper).
func TestClaimTouch(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		ks := open(t)
		k := &touchCounting{Store: ks.Objects}
		c := clock.NewFake(backendtest.T0)
		b := blocking{entered: make(chan struct{})}
		o, err := pipeline.New(pipeline.Config{Store: k, Model: llm.NewOffline(), Corpus: corpus(t),
			Steps: []pipeline.Step{b}, ClaimTouch: time.Minute, Clock: c})
		if err != nil {
			t.Fatal(err)
		}
		q := submit(t, ks.Objects, questions[0])
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := o.RunSequential(ctx, q.ID)
			done <- err
		}()
		<-b.entered
		for want := int32(1); want <= 2; want++ {
			if err := c.WaitArmed(ctx, 1); err != nil {
				t.Fatal(err)
			}
			if n := k.touches.Load(); n != want-1 {
				t.Fatalf("%d renewals before %d periods passed", n, want)
			}
			c.Advance(time.Minute)
			if err := c.WaitArmed(ctx, 1); err != nil { // the renewal is done
				t.Fatal(err)
			}
			if n := k.touches.Load(); n != want {
				t.Fatalf("%d renewals after %d periods, want %d", n, want, want)
			}
		}
		k.lost.Store(true)
		c.Advance(time.Minute)
		select {
		case err := <-done:
			if !errors.Is(err, cks.ErrLeaseLost) {
				t.Fatalf("RunSequential = %v, want the step cancelled with ErrLeaseLost", err)
			}
		case <-ctx.Done():
			t.Fatal("a lost claim did not cancel the step")
		}
	})
}
