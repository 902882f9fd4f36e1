package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/internal/base/events"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/runtime/pipeline"
)

// errParked marks a research question that ended in needs_input (exit
// status 4): the pipeline could not answer it and says why.
var errParked = errors.New("parked")

// researchPoll is how often `cks research --wait` re-reads the object: the
// guaranteed path, since the pipeline may run in another process whose step
// events never reach this hub's event stream.
const researchPoll = 500 * time.Millisecond

// cmdResearch submits a question to the research pipeline and, with --wait,
// follows it to its end: one line per transition as it happens, then the
// resolved answer with numbered citations, or why it parked (exit 4).
func cmdResearch(ctx context.Context, args []string, e env) error {
	fset := flagSet("research", e)
	var cf clientFlags
	cf.register(fset)
	b := bindInput(fset, ops.SubmitResearch, inputSpec{args: []string{"question"}})
	wait := fset.Bool("wait", false, "follow the question until it is resolved or parks, then print the answer or the reason")
	timeout := fset.Duration("timeout", 5*time.Minute, "with --wait: give up following after this long (the question goes on)")
	fset.Usage = func() { commandHelp(fset, "research", b.metas(), ops.SubmitResearch.Spec().Description) }
	pos, err := parse(fset, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: research needs exactly one QUESTION (quote it), got %d arguments", errUsage, len(pos))
	}
	if *timeout <= 0 {
		return fmt.Errorf("%w: research --timeout: expected a positive duration, got %s", errUsage, *timeout)
	}
	v, err := b.input(pos)
	if err != nil {
		return err
	}
	req := v.(*cks.SubmitResearchInput)
	if err := localCorpus(req); err != nil {
		return err
	}
	c, err := cf.client(e)
	if err != nil {
		return err
	}
	if *wait {
		if err := pipelineRuns(ctx, c); err != nil {
			return err
		}
	}
	var o cks.Object
	if err := c.Call(ctx, ops.SubmitResearch, req, &o); err != nil {
		return b.nameFlag(err)
	}
	if !*wait {
		if cf.json {
			return printJSON(e.stdout, o)
		}
		fmt.Fprintf(e.stdout, "question %d submitted (%s)\nfollow it: cks object show %d, or submit with --wait\n", o.ID, o.Status, o.ID)
		return nil
	}
	progress := e.stdout
	if cf.json {
		progress = e.stderr // stdout carries only the JSON
	}
	fmt.Fprintf(progress, "question %d submitted: %s\n", o.ID, strings.TrimSpace(req.Question))
	return followResearch(ctx, c, o.ID, *timeout, progress, e.stdout, cf.json)
}

// errNoPipeline marks `cks research --wait` where no research pipeline
// runs: nothing would ever answer the question it waits for.
var errNoPipeline = errors.New("no research pipeline runs for this hub's database")

// pipelineRuns tells, before `research --wait` submits anything, whether a
// research pipeline works the questions of c's hub: the hub runs it itself
// (its /healthz says pipeline in_process), or a `cks agent pipeline`
// process of its database is alive. It is errNoPipeline, saying how to
// start one, when neither; nil when one runs, and when it cannot tell (a
// token that may not read the processes: the wait goes on as before).
func pipelineRuns(ctx context.Context, c *client.Client) error {
	if h, err := readHealth(ctx, c.BaseURL()); err == nil && h.Pipeline == "in_process" {
		return nil
	}
	var p cks.Process
	if err := c.Call(ctx, ops.ProcessStatus, &cks.ProcessInput{ProcessKind: "pipeline"}, &p); err != nil || p.Status == cks.ProcessAlive {
		return nil
	}
	return fmt.Errorf("%w: the hub does not run it (CKS_PIPELINE_IN_PROCESS) and no pipeline process is alive "+
		"(process status pipeline: %s); start one — `cks agent pipeline` beside the hub (cks dev starts it), or run the hub with "+
		"CKS_PIPELINE_IN_PROCESS=true — or submit without --wait: the question then waits in awaiting_research until one runs",
		errNoPipeline, p.Status)
}

// localCorpus makes the --corpus of a question an absolute path, refusing
// one that is no directory here as a usage error (the pipeline reads it on
// its host: `cks research` is run beside it).
func localCorpus(req *cks.SubmitResearchInput) error {
	if req.Corpus == "" {
		return nil
	}
	abs, err := filepath.Abs(req.Corpus)
	if err != nil {
		return fmt.Errorf("%w: --corpus %s: %v", errUsage, req.Corpus, err)
	}
	st, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: --corpus %s: directory does not exist", errUsage, abs)
	case err != nil:
		return fmt.Errorf("%w: --corpus %s: %v", errUsage, abs, err)
	case !st.IsDir():
		return fmt.Errorf("%w: --corpus %s: not a directory", errUsage, abs)
	}
	req.Corpus = abs
	return nil
}

// followResearch follows question id to its end (followObject) and prints
// the outcome (as JSON with asJSON); a question that parked is errParked.
func followResearch(ctx context.Context, c *client.Client, id int64, timeout time.Duration, progress, w io.Writer, asJSON bool) error {
	v, err := followObject(ctx, c, id, timeout, progress)
	if err != nil {
		return err
	}
	if asJSON {
		if err := printJSON(w, v); err != nil {
			return err
		}
	} else {
		printResearchOutcome(w, v)
	}
	if v.Status == cks.StatusNeedsInput {
		return fmt.Errorf("%w: question %d is in needs_input: the pipeline could not answer it (see `cks object show %d`)", errParked, v.ID, v.ID)
	}
	return nil
}

// followObject follows object id until it is terminal or timeout passes,
// printing one line per new log entry to w. It re-reads the object when the
// hub's event stream reports a step event about it (a hub running the
// pipeline in-process) and every researchPoll regardless.
func followObject(ctx context.Context, c *client.Client, id int64, timeout time.Duration, w io.Writer) (cks.ObjectView, error) {
	fctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	wake := make(chan struct{}, 1)
	streamDone := make(chan struct{})
	go func() {
		defer close(streamDone)
		// Best effort: a principal without read on /, or a broken stream,
		// leaves the poll.
		c.StreamEvents(fctx, nil, func(typ string, data []byte) { //nolint:errcheck
			if typ != events.AgentStepStarted && typ != events.AgentStepCompleted {
				return
			}
			var ev struct {
				Data events.StepEvent `json:"data"`
			}
			if json.Unmarshal(data, &ev) == nil && ev.Data.ObjectID == id {
				select {
				case wake <- struct{}{}:
				default:
				}
			}
		})
	}()
	defer func() { cancel(); <-streamDone }()
	tick := time.NewTicker(researchPoll)
	defer tick.Stop()
	printed := 0
	var v cks.ObjectView
	for {
		var err error
		v, err = c.GetObject(fctx, id)
		switch {
		case err != nil && fctx.Err() != nil && ctx.Err() == nil:
			return v, fmt.Errorf("question %d: still not resolved after %s; it goes on: follow it with `cks object show %d`", id, timeout, id)
		case err != nil:
			return v, err
		}
		for _, entry := range v.Log[min(printed, len(v.Log)):] {
			fmt.Fprintln(w, transitionLine(entry, v))
		}
		printed = max(printed, len(v.Log))
		if pipeline.Terminal(v.Status) {
			return v, nil
		}
		select {
		case <-fctx.Done():
			if ctx.Err() != nil {
				return v, ctx.Err()
			}
			return v, fmt.Errorf("question %d is still %s after %s; it goes on: follow it with `cks object show %d`", id, v.Status, timeout, id)
		case <-wake:
		case <-tick.C:
		}
	}
}

// transitionLine is one progress line: "researcher: researched →
// awaiting_critique (5 claims)".
func transitionLine(e cks.TransitionEntry, v cks.ObjectView) string {
	line := fmt.Sprintf("%s: %s → %s", e.Agent, e.Action, e.TransitionedTo)
	if d := entryDetail(e, v); d != "" {
		line += " (" + d + ")"
	}
	return line
}

// entryDetail summarises what a log entry did, from the linked objects.
func entryDetail(e cks.TransitionEntry, v cks.ObjectView) string {
	if node, ok := reasoningNode(e, v); ok {
		var r pipeline.Reasoning
		_ = json.Unmarshal(node.Content, &r)
		switch node.Kind {
		case cks.KindCritique:
			acc := 0
			for _, vd := range r.Verdicts {
				if vd.Accept {
					acc++
				}
			}
			if len(r.Verdicts) == 0 || strings.Contains(r.Text, "accepted") {
				return clip(r.Text, 160)
			}
			return fmt.Sprintf("%d of %d claims accepted: %s", acc, len(r.Verdicts), clip(r.Text, 120))
		case cks.KindModelReply:
			var m struct {
				Error string `json:"error"`
			}
			_ = json.Unmarshal(node.Content, &m)
			return "unusable model reply: " + clip(m.Error, 120)
		default:
			return clip(r.Text, 160)
		}
	}
	switch e.Action {
	case "researched":
		n := 0
		for _, o := range v.Reasoning {
			var cc pipeline.ClaimContent
			if o.Kind == cks.KindClaim && json.Unmarshal(o.Content, &cc) == nil && cc.QuestionID == v.ID && cc.Round == e.Round {
				n++
			}
		}
		return plural(n, "claim")
	case "synthesized":
		// The k-th synthesized entry wrote the k-th synthesis.
		k := 0
		for _, x := range v.Log {
			if x.Seq == e.Seq {
				break
			}
			if x.Action == "synthesized" {
				k++
			}
		}
		syns := linkedOf(v, cks.KindSynthesis)
		if k < len(syns) {
			var sc pipeline.SynthesisContent
			if json.Unmarshal(syns[k].Content, &sc) == nil {
				return fmt.Sprintf("synthesis #%d citing %s", syns[k].ID, plural(len(sc.Citations), "passage"))
			}
		}
	}
	return ""
}

// reasoningNode returns the reasoning node of a log entry from the view.
func reasoningNode(e cks.TransitionEntry, v cks.ObjectView) (cks.Object, bool) {
	if e.ReasoningNodeID == nil {
		return cks.Object{}, false
	}
	i := slices.IndexFunc(v.Reasoning, func(o cks.Object) bool { return o.ID == *e.ReasoningNodeID })
	if i < 0 {
		return cks.Object{}, false
	}
	return v.Reasoning[i], true
}

// linkedOf returns the linked objects of kind, oldest first.
func linkedOf(v cks.ObjectView, kind string) []cks.Object {
	var out []cks.Object
	for _, o := range v.Reasoning {
		if o.Kind == kind {
			out = append(out, o)
		}
	}
	return out
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// clip shortens s to at most n bytes (on a rune boundary) with "…".
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// printResearchOutcome prints the resolved answer with numbered citations,
// or why the question parked.
func printResearchOutcome(w io.Writer, v cks.ObjectView) {
	fmt.Fprintln(w)
	switch v.Status {
	case cks.StatusResolved:
		syns := linkedOf(v, cks.KindSynthesis)
		if len(syns) == 0 {
			fmt.Fprintf(w, "question %d is resolved but has no synthesis\n", v.ID)
			return
		}
		var sc pipeline.SynthesisContent
		_ = json.Unmarshal(syns[len(syns)-1].Content, &sc)
		fmt.Fprintf(w, "Answer (question %d, resolved):\n", v.ID)
		printSynthesis(w, sc, "  ")
	case cks.StatusNeedsInput:
		fmt.Fprintf(w, "Parked (question %d, needs_input after %s):\n", v.ID, plural(v.Round+1, "round"))
		fmt.Fprintf(w, "  %s\n", parkReason(v))
		fmt.Fprintf(w, "\nThe whole chain: cks object show %d\n", v.ID)
	}
}

// parkReason is the rationale of the entry that parked v.
func parkReason(v cks.ObjectView) string {
	for i := len(v.Log) - 1; i >= 0; i-- {
		e := v.Log[i]
		if e.TransitionedTo != cks.StatusNeedsInput {
			continue
		}
		if node, ok := reasoningNode(e, v); ok {
			var r pipeline.Reasoning
			if json.Unmarshal(node.Content, &r) == nil && r.Text != "" {
				return r.Text
			}
		}
		return fmt.Sprintf("parked by %s (%s), no reason recorded", e.Agent, e.Action)
	}
	return "no parking entry in the log"
}

// citationMark finds "[PATH#N]" passage markers in an answer.
var citationMark = regexp.MustCompile(`\[([^\[\]\s]+#[0-9]+)\]`)

// printSynthesis prints an answer with its passage markers numbered, then
// the numbered sources: file, heading and passage id.
func printSynthesis(w io.Writer, sc pipeline.SynthesisContent, indent string) {
	num := map[string]int{}
	for i, c := range sc.Citations {
		num[c.ID] = i + 1
	}
	answer := citationMark.ReplaceAllStringFunc(sc.Answer, func(m string) string {
		if n, ok := num[m[1:len(m)-1]]; ok {
			return fmt.Sprintf("[%d]", n)
		}
		return m
	})
	fmt.Fprintf(w, "%s%s\n", indent, answer)
	if len(sc.Citations) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%sSources:\n", indent)
	for i, c := range sc.Citations {
		fmt.Fprintf(w, "%s  [%d] %s\n", indent, i+1, sourceLabel(c))
	}
}

// sourceLabel is "FILE — Heading (ID)".
func sourceLabel(c pipeline.Citation) string {
	s := c.Source
	if c.Heading != "" {
		s += " — " + c.Heading
	}
	return s + " (" + c.ID + ")"
}
