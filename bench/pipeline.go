package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/base/events"
	"github.com/cks-dev/cks/internal/runtime/pipeline"
	"github.com/cks-dev/cks/internal/service/llm"
)

// PipelineConfig is one run of the pipeline benchmark.
type PipelineConfig struct {
	// Questions is how many questions go through the four steps (default 1,000).
	Questions int
	// Question returns the i-th question; it must resolve in one round
	// against Corpus with the offline model.
	Question func(i int) string
	Corpus   *llm.Corpus
	// Workers is the number of workers per step (default 1).
	Workers int
	// NoNotify leaves the fallback poll as the only wake-up; Poll is its
	// interval (default 30 s, pipeline.DefaultPoll).
	NoNotify bool
	Poll     time.Duration
	// Probes is how many questions are then sent one at a time into the idle
	// pipeline to measure the wake-up hand-off (default 20).
	Probes int
	// Progress, when set, is called about every half second with how many
	// questions have resolved.
	Progress func(done, total int)
}

// PipelineResult is what one run measured.
type PipelineResult struct {
	Questions   int           `json:"questions"`
	Workers     int           `json:"workers_per_step"`
	Notify      bool          `json:"notify"`
	Duration    time.Duration `json:"duration_ns"`
	ObjectsRate float64       `json:"questions_per_s"`
	Transitions int           `json:"transitions"`
	// Coordination is the store time of one step run: the claim (read and
	// claim), the read of the object with its log and edges, the reads of
	// linked objects, and the transition with its log entry and notify;
	// everything but the model.
	CoordP50 time.Duration `json:"coordination_p50_ns"`
	CoordP99 time.Duration `json:"coordination_p99_ns"`
	// Wake is the hand-off in an idle pipeline (the probes): from one
	// step's completion on a question to the next step starting on it.
	WakeP50 time.Duration `json:"wake_p50_ns"`
	WakeP99 time.Duration `json:"wake_p99_ns"`
}

// timedStore adds up the time of the claim path (the read that finds
// claimable objects and the claim itself).
type timedStore struct {
	pipeline.Store
	mu     sync.Mutex
	total  time.Duration
	claims int
}

func (s *timedStore) ListObjects(ctx context.Context, f cks.ObjectFilter) (cks.ObjectPage, error) {
	begin := time.Now()
	p, err := s.Store.ListObjects(ctx, f)
	s.mu.Lock()
	s.total += time.Since(begin)
	s.mu.Unlock()
	return p, err
}

func (s *timedStore) ClaimObjects(ctx context.Context, status, worker string, n int) ([]cks.Object, error) {
	begin := time.Now()
	objs, err := s.Store.ClaimObjects(ctx, status, worker, n)
	s.mu.Lock()
	s.total += time.Since(begin)
	s.claims += len(objs)
	s.mu.Unlock()
	return objs, err
}

// timedModel records how long the model took for each question's latest call.
type timedModel struct {
	llm.Model
	mu   sync.Mutex
	took map[string]time.Duration
}

func (m *timedModel) note(q string, begin time.Time) {
	m.mu.Lock()
	m.took[q] = time.Since(begin)
	m.mu.Unlock()
}

func (m *timedModel) Research(ctx context.Context, in llm.ResearchInput) (llm.ResearchOutput, error) {
	defer m.note(in.Question, time.Now())
	return m.Model.Research(ctx, in)
}

func (m *timedModel) Critique(ctx context.Context, in llm.CritiqueInput) (llm.CritiqueOutput, error) {
	defer m.note(in.Question, time.Now())
	return m.Model.Critique(ctx, in)
}

func (m *timedModel) Synthesize(ctx context.Context, in llm.SynthesisInput) (llm.SynthesisOutput, error) {
	defer m.note(in.Question, time.Now())
	return m.Model.Synthesize(ctx, in)
}

func (m *timedModel) Validate(ctx context.Context, in llm.ValidationInput) (llm.ValidationOutput, error) {
	defer m.note(in.Question, time.Now())
	return m.Model.Validate(ctx, in)
}

// Pipeline submits cfg.Questions questions to st and runs an orchestrator
// with the offline model until every one is resolved.
func Pipeline(ctx context.Context, st *backend.Backend, cfg PipelineConfig) (PipelineResult, error) {
	if cfg.Questions <= 0 {
		cfg.Questions = 1000
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 1
	}
	if cfg.Probes <= 0 {
		cfg.Probes = 20
	}
	res := PipelineResult{Questions: cfg.Questions, Workers: cfg.Workers, Notify: !cfg.NoNotify}
	ts := &timedStore{Store: st.Objects}
	model := &timedModel{Model: llm.NewOffline(), took: map[string]time.Duration{}}
	questionOf := map[int64]string{}
	bus := &events.Bus{}
	// Events sample the latencies (a full buffer drops some; completion is
	// read from the store).
	evs, unsub := bus.SubscribeBuffered(1 << 16)
	defer unsub()

	var (
		mu        sync.Mutex
		coord     []time.Duration
		wakes     []time.Duration
		completed = map[int64]time.Time{}
	)
	var probing atomic.Bool
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		for e := range evs {
			se, ok := e.Data.(events.StepEvent)
			if !ok {
				continue
			}
			mu.Lock()
			switch e.Type {
			case events.AgentStepStarted:
				if at, ok := completed[se.ObjectID]; ok && probing.Load() {
					wakes = append(wakes, e.At.Sub(at))
				}
				delete(completed, se.ObjectID)
			case events.AgentStepCompleted:
				model.mu.Lock()
				took := model.took[questionOf[se.ObjectID]]
				model.mu.Unlock()
				coord = append(coord, time.Duration(se.DurationMS*float64(time.Millisecond))-took)
				res.Transitions++
				if se.To != cks.StatusResolved {
					completed[se.ObjectID] = e.At
				}
			}
			mu.Unlock()
		}
	}()

	// Questions first, then the orchestrator: the run measures the steps.
	for i := range cfg.Questions {
		q := cfg.Question(i)
		obj, err := pipeline.Submit(ctx, st.Objects, pipeline.Question{Question: q}, "bench")
		if err != nil {
			return res, err
		}
		mu.Lock()
		questionOf[obj.ID] = q
		mu.Unlock()
	}
	o, err := pipeline.New(pipeline.Config{Store: ts, Changes: st.Changes, Model: model, Corpus: cfg.Corpus, Workers: cfg.Workers,
		NoNotify: cfg.NoNotify, Poll: cfg.Poll, Bus: bus, Name: "bench"})
	if err != nil {
		return res, err
	}
	begin := time.Now()
	// A service, as a hub runs it: started here, stopped (its workers
	// waited for) once the probes are done.
	if err := o.Start(ctx); err != nil {
		return res, err
	}
	// Completion is read from the store every 20 ms (the run's resolution).
	var n int
	tick := time.NewTicker(20 * time.Millisecond)
	lastReport := time.Now()
	for n < cfg.Questions && ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
		if n, err = countStatus(ctx, st.Objects, cks.StatusResolved); err != nil {
			break
		}
		if cfg.Progress != nil && time.Since(lastReport) >= 500*time.Millisecond {
			cfg.Progress(n, cfg.Questions)
			lastReport = time.Now()
		}
	}
	tick.Stop()
	res.Duration = time.Since(begin)
	// Probes: one question at a time, each step idle when it is woken.
	probing.Store(true)
	for i := 0; i < cfg.Probes && err == nil && ctx.Err() == nil; i++ {
		q := "probe: " + cfg.Question(i)
		var obj cks.Object
		if obj, err = pipeline.Submit(ctx, st.Objects, pipeline.Question{Question: q}, "bench"); err != nil {
			break
		}
		mu.Lock()
		questionOf[obj.ID] = q
		mu.Unlock()
		for ctx.Err() == nil {
			got, gerr := st.Objects.GetObject(ctx, obj.ID)
			if gerr != nil {
				err = gerr
				break
			}
			if pipeline.Terminal(got.Status) {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	if serr := o.Stop(context.WithoutCancel(ctx)); serr != nil && err == nil {
		err = serr
	}
	unsub()
	<-collected
	if err != nil {
		return res, err
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	if cfg.Progress != nil {
		cfg.Progress(n, cfg.Questions)
	}
	mu.Lock()
	defer mu.Unlock()
	// The claim path ran outside the step: add its mean to every run.
	ts.mu.Lock()
	claimMean := ts.total / time.Duration(max(ts.claims, 1))
	ts.mu.Unlock()
	for i := range coord {
		coord[i] += claimMean
	}
	slices.Sort(coord)
	slices.Sort(wakes)
	res.ObjectsRate = float64(cfg.Questions) / res.Duration.Seconds()
	res.CoordP50, res.CoordP99 = percentile(coord, 0.5), percentile(coord, 0.99)
	res.WakeP50, res.WakeP99 = percentile(wakes, 0.5), percentile(wakes, 0.99)
	return res, nil
}

// countStatus counts the objects of status.
func countStatus(ctx context.Context, st pipeline.Store, status string) (int, error) {
	n := 0
	f := cks.ObjectFilter{Statuses: []string{status}, Limit: cks.MaxListLimit}
	for {
		page, err := st.ListObjects(ctx, f)
		if err != nil {
			return n, err
		}
		n += len(page.Objects)
		if page.Next == 0 {
			return n, nil
		}
		f.After = page.Next
	}
}

// researchQuestions resolve in one round against the shipped corpus with
// the offline model.
var researchQuestions = [...]string{
	"How does cks stop a running task?",
	"What happens when an agent process misses its heartbeats?",
	"How do sweepers stop across nodes?",
	"What is the dispatch exclusion set?",
}

// ResearchQuestion is the i-th benchmark question: one of four questions
// the shipped corpus answers, numbered so every question is its own object.
func ResearchQuestion(i int) string {
	return fmt.Sprintf("%s (%d)", researchQuestions[i%len(researchQuestions)], i)
}
