package agents

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/runtime/worker"
	"github.com/cks-dev/cks/internal/service/knowledge"
	"github.com/cks-dev/cks/internal/service/llm"
)

// ContradictionJudge is an optional method of an llm.Model: a model that
// implements it decides which of two contradicting claims the evidence
// supports, returning 0 or 1 (the index of the winner) and its reason.
// passages are the texts the claims cite (when their citations carry
// text). No provider implements it yet, so today the Critic agent decides
// by its offline rule (see Critic).
type ContradictionJudge interface {
	JudgeContradiction(ctx context.Context, claims [2]llm.Claim, passages []llm.Passage) (winner int, reason string, err error)
}

// CriticConfig configures Critic.
type CriticConfig struct {
	// Model judges when it implements ContradictionJudge; when it is nil
	// or does not, the offline rule does.
	Model llm.Model
}

// CritiquePayload is the payload of a critique task.
type CritiquePayload struct {
	Claims []int64 `json:"claims"`
}

// CritiqueContent is the content of the critique node the Critic agent
// writes (kind "critique").
type CritiqueContent struct {
	Text   string `json:"text"`
	Winner int64  `json:"winner"`
	Loser  int64  `json:"loser"`
	Reason string `json:"reason"`
	// Judge is "rule" (the offline rule) or the model's name.
	Judge string `json:"judge"`
}

// CritiqueDone is the result of a critique task that disputed a claim.
type CritiqueDone struct {
	Outcome    string `json:"outcome"` // "disputed"
	Winner     int64  `json:"winner"`
	Loser      int64  `json:"loser"`
	CritiqueID int64  `json:"critique_id"`
}

// Critic returns the resolver of `cks agent critic` for critique tasks:
// two claims the contradiction sweeper found contradicting each other. It
// reads both; when either is already disputed the task completes as a
// no-op. Otherwise it decides which one the evidence supports — by
// cfg.Model when it is a ContradictionJudge, else by the offline rule:
//
//  1. the claim with more distinct citations wins (a claim's "citations"
//     content field: passage ids, or objects with an "id" and/or "text");
//  2. on a tie, the claim more of whose terms occur in the text of the
//     passages it cites wins (citations without text count for nothing);
//  3. on a tie, the older claim (lower object id) wins.
//
// It then writes a critique node (CritiqueContent) and marks the loser
// disputed, in one transition of the loser: it claims the loser in its
// current status, transitions it to "disputed" (action "disputed", agent
// "critic") with the critique attached — edge critique → loser
// depends_on/refutes, link critique → winner depends_on/supports — and the
// log entry pointing to the critique. A loser with no status cannot be
// transitioned (a status changes only with a log entry): then the winner
// is transitioned to its own status (action "critiqued"; critique → winner
// supports, link → loser refutes) and sets the loser disputed with a log
// entry of its own pointing to the critique; two claims without a status
// fail permanently. A claim claimed by someone else, or whose status
// changed meanwhile, fails the attempt retryably.
func Critic(st *knowledge.Service, cfg CriticConfig) worker.Resolver {
	return func(ctx context.Context, a *worker.Attempt) (worker.Result, error) {
		var p CritiquePayload
		if err := decodePayload(a.Task(), &p); err != nil {
			return worker.Result{}, err
		}
		return critique(ctx, st, cfg, p, fmt.Sprintf("critic/task-%d", a.Task().ID))
	}
}

// claimEvidence is what the offline rule reads of a claim.
type claimEvidence struct {
	obj       cks.Object
	statement string
	citations []citation
	// supported is the claim's terms found in its cited passages' text.
	supported []string
}

type citation struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

func critique(ctx context.Context, st *knowledge.Service, cfg CriticConfig, p CritiquePayload, holder string) (worker.Result, error) {
	if len(p.Claims) != 2 || p.Claims[0] <= 0 || p.Claims[1] <= 0 || p.Claims[0] == p.Claims[1] {
		return worker.Result{}, worker.Permanent(fmt.Errorf("critique: payload needs \"claims\": two different object ids, got %v", p.Claims))
	}
	var ev [2]claimEvidence
	for i, id := range p.Claims {
		o, err := st.GetObject(ctx, id)
		if errors.Is(err, cks.ErrNotFound) {
			return worker.Result{}, worker.Permanent(err)
		}
		if err != nil {
			return worker.Result{}, err
		}
		if o.Status == cks.StatusDisputed {
			return noopResult("claim %d is already disputed: nothing to critique", id), nil
		}
		ev[i] = readClaim(o)
	}
	win, reason, judge, err := judge(ctx, cfg.Model, ev)
	if err != nil {
		return worker.Result{}, err
	}
	winner, loser := ev[win], ev[1-win]
	c := CritiqueContent{
		Text: fmt.Sprintf("claims #%d and #%d contradict each other; the evidence supports #%d, so #%d is disputed: %s",
			p.Claims[0], p.Claims[1], winner.obj.ID, loser.obj.ID, reason),
		Winner: winner.obj.ID, Loser: loser.obj.ID, Reason: reason, Judge: judge,
	}
	content, err := json.Marshal(c)
	if err != nil {
		return worker.Result{}, worker.Permanent(err)
	}
	// The loser is transitioned to disputed with the critique attached
	// (critique → loser refutes, link → winner supports). A loser with no
	// status cannot be transitioned: then the winner is, to its own status
	// (action "critiqued"; critique → winner supports, link → loser
	// refutes), and sets the loser's status with a log entry of its own.
	subject := loser.obj
	tr := knowledge.ObjectTransition{From: subject.Status, To: cks.StatusDisputed, Action: cks.StatusDisputed, Agent: AgentCritic, Reasoning: 0}
	edge, link, linkTo := cks.SemRefutes, cks.SemSupports, winner.obj.ID
	if subject.Status == "" {
		if winner.obj.Status == "" {
			return worker.Result{}, worker.Permanent(fmt.Errorf("claims %d and %d have no current_status: a claim's status changes only with a log entry, so neither can be marked disputed",
				p.Claims[0], p.Claims[1]))
		}
		subject = winner.obj
		tr.From, tr.To, tr.Action = subject.Status, subject.Status, "critiqued"
		tr.SetStatus = []knowledge.StatusChange{{ObjectID: loser.obj.ID, Status: cks.StatusDisputed, Action: cks.StatusDisputed}}
		edge, link, linkTo = cks.SemSupports, cks.SemRefutes, loser.obj.ID
	}
	tr.Attach = []knowledge.Attachment{{
		Object: knowledge.NewObject{Kind: cks.KindCritique, Title: fmt.Sprintf("critique of contradicting claims #%d and #%d", p.Claims[0], p.Claims[1]),
			Content: content, CreatedBy: AgentCritic},
		BaseType: cks.BaseDependsOn, SemanticType: edge,
		Links: []knowledge.LinkFrom{{Dst: linkTo, BaseType: cks.BaseDependsOn, SemanticType: link}},
	}}
	held, err := st.ClaimObject(ctx, subject.ID, holder, []string{subject.Status})
	if err != nil {
		// Claimed by another worker, or its status moved: retry later.
		return worker.Result{}, fmt.Errorf("claiming claim %d to record the critique: %w", subject.ID, err)
	}
	_, made, err := st.TransitionObject(ctx, subject.ID, held.ClaimToken, tr)
	if err != nil {
		if rerr := st.ReleaseClaim(context.WithoutCancel(ctx), subject.ID, held.ClaimToken); rerr != nil && !errors.Is(rerr, cks.ErrLeaseLost) {
			err = errors.Join(err, fmt.Errorf("releasing the claim: %w", rerr))
		}
		return worker.Result{}, fmt.Errorf("marking claim %d disputed: %w", loser.obj.ID, err)
	}
	return output(CritiqueDone{Outcome: cks.StatusDisputed, Winner: winner.obj.ID, Loser: loser.obj.ID, CritiqueID: made[0].ID}), nil
}

// readClaim extracts a claim's statement and citations from its content:
// the statement is the "text" field, else "statement", else "subject
// predicate value"; citations are the "citations" array's distinct
// entries (strings are ids; objects give "id" and "text").
func readClaim(o cks.Object) claimEvidence {
	var c struct {
		Text      string            `json:"text"`
		Statement string            `json:"statement"`
		Subject   any               `json:"subject"`
		Predicate any               `json:"predicate"`
		Value     any               `json:"value"`
		Citations []json.RawMessage `json:"citations"`
	}
	_ = json.Unmarshal(o.Content, &c) // a field of another type reads as absent
	ev := claimEvidence{obj: o, statement: cmp.Or(c.Text, c.Statement)}
	if ev.statement == "" {
		var parts []string
		for _, v := range []any{c.Subject, c.Predicate, c.Value} {
			if v != nil {
				parts = append(parts, fmt.Sprint(v))
			}
		}
		ev.statement = strings.Join(parts, " ")
	}
	if ev.statement == "" {
		ev.statement = o.Title
	}
	seen := map[string]bool{}
	var passages []string
	for _, raw := range c.Citations {
		var ct citation
		var id string
		if json.Unmarshal(raw, &id) == nil {
			ct.ID = id
		} else if json.Unmarshal(raw, &ct) != nil {
			continue
		}
		key := cmp.Or(ct.ID, "text:"+ct.Text)
		if key == "text:" || seen[key] {
			continue
		}
		seen[key] = true
		ev.citations = append(ev.citations, ct)
		if ct.Text != "" {
			passages = append(passages, ct.Text)
		}
	}
	ev.supported = sharedTerms(termSet(ev.statement), termSet(passages...))
	return ev
}

// judge returns the index of the claim the evidence supports and why:
// the model's verdict when it is a ContradictionJudge, else the offline
// rule's.
func judge(ctx context.Context, m llm.Model, ev [2]claimEvidence) (int, string, string, error) {
	if j, ok := m.(ContradictionJudge); ok {
		var claims [2]llm.Claim
		var passages []llm.Passage
		for i, e := range ev {
			claims[i].Text = e.statement
			claims[i].Citations = []string{}
			for _, c := range e.citations {
				claims[i].Citations = append(claims[i].Citations, c.ID)
				if c.Text != "" {
					passages = append(passages, llm.Passage{ID: c.ID, Text: c.Text})
				}
			}
		}
		w, reason, err := j.JudgeContradiction(ctx, claims, passages)
		if err != nil {
			return 0, "", "", fmt.Errorf("model %s: %w", m.Name(), err)
		}
		if w != 0 && w != 1 {
			return 0, "", "", fmt.Errorf("model %s: judged claim %d of 2", m.Name(), w)
		}
		return w, reason, m.Name(), nil
	}
	a, b := ev[0], ev[1]
	switch {
	case len(a.citations) != len(b.citations):
		w := 0
		if len(b.citations) > len(a.citations) {
			w = 1
		}
		return w, fmt.Sprintf("#%d cites %d distinct source(s), #%d cites %d: the better-cited claim wins",
			ev[w].obj.ID, len(ev[w].citations), ev[1-w].obj.ID, len(ev[1-w].citations)), "rule", nil
	case len(a.supported) != len(b.supported):
		w := 0
		if len(b.supported) > len(a.supported) {
			w = 1
		}
		return w, fmt.Sprintf("both cite %d source(s); %d of #%d's terms occur in the passages it cites (%s), %d of #%d's: the better-supported claim wins",
			len(a.citations), len(ev[w].supported), ev[w].obj.ID, strings.Join(ev[w].supported, ", "), len(ev[1-w].supported), ev[1-w].obj.ID), "rule", nil
	}
	w := 0
	if b.obj.ID < a.obj.ID {
		w = 1
	}
	return w, fmt.Sprintf("both cite %d source(s) and are equally supported by them: the older claim, #%d, stands",
		len(a.citations), ev[w].obj.ID), "rule", nil
}
