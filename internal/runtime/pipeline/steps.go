package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/service/knowledge"
	"github.com/cks-dev/cks/internal/service/llm"
)

// Question is the content of a question object.
type Question struct {
	Question string `json:"question"`
	// Corpus, when set, is a directory (an absolute path on the host the
	// pipeline runs on) the Researcher reads instead of the configured
	// corpus. It is loaded once per path and cached (Env.CorpusFor); a
	// directory that cannot be loaded parks the question in needs_input
	// with the error as the reason.
	Corpus string `json:"corpus,omitempty"`
}

// corpusOf returns the corpus directory a question object asks for, or "".
func corpusOf(obj cks.Object) string {
	var q Question
	if json.Unmarshal(obj.Content, &q) != nil {
		return ""
	}
	return q.Corpus
}

// Citation is a passage a claim cites, copied into the claim so the claim
// stands on its own.
type Citation struct {
	ID      string `json:"id"`
	Source  string `json:"source"`
	Heading string `json:"heading,omitempty"`
	Text    string `json:"text"`
}

// ClaimContent is the content of a claim object.
type ClaimContent struct {
	Text       string     `json:"text"`
	Citations  []Citation `json:"citations"`
	QuestionID int64      `json:"question_id"`
	Round      int        `json:"round"`
}

// SynthesisContent is the content of a synthesis object.
type SynthesisContent struct {
	Answer    string     `json:"answer"`
	Citations []Citation `json:"citations"`
	ClaimIDs  []int64    `json:"claim_ids"`
	Model     string     `json:"model"`
}

// Reasoning is the content of a critique or rationale node.
type Reasoning struct {
	Text  string `json:"text"`
	Model string `json:"model,omitempty"`
	// Verdicts are a critique's, per claim.
	Verdicts []ClaimVerdict `json:"verdicts,omitempty"`
	// SynthesisID is the synthesis an Arbiter's rationale judged.
	SynthesisID int64 `json:"synthesis_id,omitempty"`
	// SendBackTo is where a rejection sent the question.
	SendBackTo string `json:"send_back_to,omitempty"`
}

// ClaimVerdict is a critique's verdict on one claim object.
type ClaimVerdict struct {
	ClaimID int64  `json:"claim_id"`
	Accept  bool   `json:"accept"`
	Reason  string `json:"reason"`
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // the pipeline's own types always encode
	}
	return b
}

// QuestionText returns the question of a question object.
func QuestionText(obj cks.Object) (string, error) {
	var q Question
	if err := json.Unmarshal(obj.Content, &q); err != nil || strings.TrimSpace(q.Question) == "" {
		return "", fmt.Errorf("object %d is not a question (content %s)", obj.ID, obj.Content)
	}
	return q.Question, nil
}

// linked returns the objects linked to obj by an edge src → obj of the
// semantic type, oldest first (one per edge), read from the store at once.
func (e *Env) linked(ctx context.Context, obj cks.Object, semantic string) ([]cks.Object, error) {
	var ids []int64
	for _, ed := range obj.Edges {
		if ed.Dst == obj.ID && ed.SemanticType == semantic {
			ids = append(ids, ed.Src)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	objs, err := e.Store.GetObjects(ctx, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]cks.Object, len(objs))
	for _, o := range objs {
		byID[o.ID] = o
	}
	slices.Sort(ids)
	out := make([]cks.Object, len(ids))
	for i, id := range ids {
		out[i] = byID[id]
	}
	return out, nil
}

// claimObjects returns the question's claims with one of statuses, and the
// same as model claims.
func (e *Env) claimObjects(ctx context.Context, q cks.Object, statuses ...string) ([]cks.Object, []llm.Claim, []llm.Passage, error) {
	all, err := e.linked(ctx, q, cks.SemAnswers)
	if err != nil {
		return nil, nil, nil, err
	}
	return claimsIn(all, statuses...)
}

// claimsIn picks the claim objects of all with one of statuses, and the same
// as model claims with the passages they cite.
func claimsIn(all []cks.Object, statuses ...string) ([]cks.Object, []llm.Claim, []llm.Passage, error) {
	var (
		objs     []cks.Object
		claims   []llm.Claim
		passages []llm.Passage
		seen     = map[string]bool{}
	)
	for _, o := range all {
		if !slices.Contains(statuses, o.Status) {
			continue
		}
		var c ClaimContent
		if err := json.Unmarshal(o.Content, &c); err != nil {
			return nil, nil, nil, fmt.Errorf("claim %d: %w", o.ID, err)
		}
		lc := llm.Claim{Text: c.Text}
		for _, cit := range c.Citations {
			lc.Citations = append(lc.Citations, cit.ID)
			if !seen[cit.ID] {
				seen[cit.ID] = true
				passages = append(passages, llm.Passage{ID: cit.ID, Source: cit.Source, Heading: cit.Heading, Text: cit.Text})
			}
		}
		objs = append(objs, o)
		claims = append(claims, lc)
	}
	return objs, claims, passages, nil
}

// feedback returns the text of every critique and rationale about q.
func (e *Env) feedback(ctx context.Context, q cks.Object) ([]string, error) {
	var out []string
	for _, sem := range []string{cks.SemCritiques, cks.SemRefutes} {
		nodes, err := e.linked(ctx, q, sem)
		if err != nil {
			return nil, err
		}
		for _, n := range nodes {
			var r Reasoning
			if json.Unmarshal(n.Content, &r) == nil && r.Text != "" {
				out = append(out, r.Text)
			}
		}
	}
	return out, nil
}

// move transitions obj to status to with action, attaching the optional
// reasoning node (the log entry points to it).
func (e *Env) move(ctx context.Context, obj cks.Object, agent, to, action string, reason *knowledge.Attachment) (Outcome, error) {
	t := knowledge.ObjectTransition{From: obj.Status, To: to, Action: action, Agent: agent, Reasoning: -1}
	if reason != nil {
		t.Attach, t.Reasoning = []knowledge.Attachment{*reason}, 0
	}
	if _, _, err := e.Store.TransitionObject(ctx, obj.ID, obj.ClaimToken, t); err != nil {
		return Outcome{}, err
	}
	return Outcome{To: to, Action: action}, nil
}

// park moves obj to needs_input with a rationale node saying why.
func (e *Env) park(ctx context.Context, obj cks.Object, agent, why string) (Outcome, error) {
	e.Log.Info("question parked", "object_id", obj.ID, "reason", why)
	return e.move(ctx, obj, agent, cks.StatusNeedsInput, ActionParked, reasonNode(cks.KindRationale, cks.SemParks, Reasoning{Text: why}))
}

// sendBack returns obj to an earlier status for another round, with the
// reasoning node that says why (and the claim status changes set), or parks
// it when the rounds are used up.
func (e *Env) sendBack(ctx context.Context, obj cks.Object, agent, to string, why *knowledge.Attachment, text string, set ...knowledge.StatusChange) (Outcome, error) {
	t := knowledge.ObjectTransition{From: obj.Status, To: to, Action: "rejected", Agent: agent, NextRound: true,
		Attach: []knowledge.Attachment{*why}, Reasoning: 0, SetStatus: set}
	if obj.Round+1 >= e.MaxRounds {
		t.To, t.Action, t.NextRound = cks.StatusNeedsInput, ActionParked, false
		t.Attach = append(t.Attach, *reasonNode(cks.KindRationale, cks.SemParks, Reasoning{
			Text: fmt.Sprintf("parked after %d rounds; last rejection: %s", obj.Round+1, text)}))
		t.Reasoning = 1
		e.Log.Info("question parked", "object_id", obj.ID, "rounds", obj.Round+1, "reason", text)
	}
	if _, _, err := e.Store.TransitionObject(ctx, obj.ID, obj.ClaimToken, t); err != nil {
		return Outcome{}, err
	}
	return Outcome{To: t.To, Action: t.Action}, nil
}

// recordFailure keeps an unusable model reply as a reasoning node and
// logs the failure without moving obj (its claim is released).
func (e *Env) recordFailure(ctx context.Context, obj cks.Object, agent, model string, reply *llm.ReplyError) (Outcome, error) {
	node := &knowledge.Attachment{Object: knowledge.NewObject{Kind: cks.KindModelReply, Title: "unusable reply to " + agent,
		Content:   mustJSON(map[string]string{"raw": reply.Raw, "error": reply.Err.Error(), "model": model, "step": agent}),
		CreatedBy: agent}, BaseType: cks.BaseDependsOn, SemanticType: cks.SemFailedReply}
	e.Log.Warn("unusable model reply", "object_id", obj.ID, "step", agent, "err", reply.Err)
	return e.move(ctx, obj, agent, obj.Status, ActionFailed, node)
}

// reasonNode is a reasoning node of kind about the subject, linked with
// semantic type sem.
func reasonNode(kind, sem string, r Reasoning) *knowledge.Attachment {
	return &knowledge.Attachment{Object: knowledge.NewObject{Kind: kind, Title: truncate(r.Text, 120), Content: mustJSON(r)},
		BaseType: cks.BaseDependsOn, SemanticType: sem}
}

// Researcher retrieves passages for the question from the corpus and asks
// the model for claims with citations (awaiting_research / needs_research →
// awaiting_critique). Round r reads the r-th group of passages, so a
// question sent back looks further down the ranking.
type Researcher struct{}

// Name returns "researcher".
func (Researcher) Name() string { return "researcher" }

// Claims returns awaiting_research and needs_research.
func (Researcher) Claims() []string {
	return []string{cks.StatusAwaitingResearch, cks.StatusNeedsResearch}
}

// Run researches q.
func (s Researcher) Run(ctx context.Context, e *Env, q cks.Object) (Outcome, error) {
	text, err := QuestionText(q)
	if err != nil {
		return e.park(ctx, q, s.Name(), err.Error())
	}
	corpus, err := e.CorpusFor(corpusOf(q))
	if err != nil {
		return e.park(ctx, q, s.Name(), err.Error())
	}
	fb, err := e.feedback(ctx, q)
	if err != nil {
		return Outcome{}, err
	}
	hits := corpus.Search(text, e.Passages*(q.Round+1))
	passages := hits[min(len(hits), e.Passages*q.Round):]
	byID := map[string]llm.Passage{}
	for _, p := range passages {
		byID[p.ID] = p
	}
	out, err := e.Model.Research(ctx, llm.ResearchInput{Question: text, Passages: passages, Feedback: fb, Round: q.Round})
	if err != nil {
		return Outcome{}, err
	}
	var attach []knowledge.Attachment
	for i, c := range out.Claims {
		cc := ClaimContent{Text: c.Text, QuestionID: q.ID, Round: q.Round}
		for _, id := range c.Citations {
			p, ok := byID[id]
			if !ok {
				return Outcome{}, &llm.ReplyError{Raw: string(mustJSON(out)), Err: fmt.Errorf("claim %d cites %q, which was not given", i, id)}
			}
			cc.Citations = append(cc.Citations, Citation{ID: p.ID, Source: p.Source, Heading: p.Heading, Text: p.Text})
		}
		attach = append(attach, knowledge.Attachment{
			Object:   knowledge.NewObject{Kind: cks.KindClaim, Title: truncate(c.Text, 120), Content: mustJSON(cc), Status: cks.StatusProposed, CreatedBy: s.Name()},
			BaseType: cks.BaseDependsOn, SemanticType: cks.SemAnswers})
	}
	t := knowledge.ObjectTransition{From: q.Status, To: cks.StatusAwaitingCritique, Action: "researched", Agent: s.Name(),
		Attach: attach, Reasoning: -1}
	if _, _, err := e.Store.TransitionObject(ctx, q.ID, q.ClaimToken, t); err != nil {
		return Outcome{}, err
	}
	return Outcome{To: cks.StatusAwaitingCritique, Action: "researched"}, nil
}

// Critic judges the claims the last research round proposed (awaiting_
// critique → awaiting_synthesis when they suffice, else needs_research with
// the critique attached). Each claim becomes accepted or rejected, and the
// critique node is linked to each with supports or refutes.
type Critic struct{}

// Name returns "critic".
func (Critic) Name() string { return "critic" }

// Claims returns awaiting_critique.
func (Critic) Claims() []string { return []string{cks.StatusAwaitingCritique} }

// Run critiques q's proposed claims.
func (s Critic) Run(ctx context.Context, e *Env, q cks.Object) (Outcome, error) {
	text, err := QuestionText(q)
	if err != nil {
		return e.park(ctx, q, s.Name(), err.Error())
	}
	// One read of the question's claims serves both the proposed ones and
	// the count of those accepted in earlier rounds.
	all, err := e.linked(ctx, q, cks.SemAnswers)
	if err != nil {
		return Outcome{}, err
	}
	objs, claims, passages, err := claimsIn(all, cks.StatusProposed)
	if err != nil {
		return Outcome{}, err
	}
	accepted, _, _, err := claimsIn(all, cks.StatusAccepted)
	if err != nil {
		return Outcome{}, err
	}
	if len(claims) == 0 {
		why := reasonNode(cks.KindCritique, cks.SemCritiques, Reasoning{Text: "the research round found no claims to critique"})
		return e.sendBack(ctx, q, s.Name(), cks.StatusNeedsResearch, why, "no claims found")
	}
	out, err := e.Model.Critique(ctx, llm.CritiqueInput{Question: text, Claims: claims, Passages: passages})
	if err != nil {
		return Outcome{}, err
	}
	verdicts := make([]ClaimVerdict, len(objs))
	for i, o := range objs {
		verdicts[i] = ClaimVerdict{ClaimID: o.ID, Reason: "no verdict given: not accepted"}
	}
	for _, v := range out.Verdicts {
		if v.Claim < 0 || v.Claim >= len(objs) {
			return Outcome{}, &llm.ReplyError{Raw: string(mustJSON(out)), Err: fmt.Errorf("verdict for claim %d of %d", v.Claim, len(objs))}
		}
		verdicts[v.Claim] = ClaimVerdict{ClaimID: objs[v.Claim].ID, Accept: v.Accept, Reason: v.Reason}
	}
	node := reasonNode(cks.KindCritique, cks.SemCritiques, Reasoning{Text: out.Summary, Model: e.Model.Name(), Verdicts: verdicts})
	node.Object.CreatedBy = s.Name()
	var set []knowledge.StatusChange
	nAccepted := len(accepted)
	for _, v := range verdicts {
		sem, status := cks.SemRefutes, cks.StatusRejected
		if v.Accept {
			sem, status = cks.SemSupports, cks.StatusAccepted
			nAccepted++
		}
		node.Links = append(node.Links, knowledge.LinkFrom{Dst: v.ClaimID, BaseType: cks.BaseDependsOn, SemanticType: sem})
		set = append(set, knowledge.StatusChange{ObjectID: v.ClaimID, Status: status, Action: status})
	}
	if !out.Sufficient || nAccepted == 0 {
		return e.sendBack(ctx, q, s.Name(), cks.StatusNeedsResearch, node, out.Summary, set...)
	}
	t := knowledge.ObjectTransition{From: q.Status, To: cks.StatusAwaitingSynthesis, Action: "critiqued", Agent: s.Name(),
		Attach: []knowledge.Attachment{*node}, Reasoning: 0, SetStatus: set}
	if _, _, err := e.Store.TransitionObject(ctx, q.ID, q.ClaimToken, t); err != nil {
		return Outcome{}, err
	}
	return Outcome{To: cks.StatusAwaitingSynthesis, Action: "critiqued"}, nil
}

// Synthesizer writes a synthesis object from every accepted claim of the
// question (awaiting_synthesis → awaiting_arbitration), linked to the
// question (synthesizes) and to the claims it rests on (cites).
type Synthesizer struct{}

// Name returns "synthesizer".
func (Synthesizer) Name() string { return "synthesizer" }

// Claims returns awaiting_synthesis.
func (Synthesizer) Claims() []string { return []string{cks.StatusAwaitingSynthesis} }

// Run synthesizes an answer to q.
func (s Synthesizer) Run(ctx context.Context, e *Env, q cks.Object) (Outcome, error) {
	text, err := QuestionText(q)
	if err != nil {
		return e.park(ctx, q, s.Name(), err.Error())
	}
	objs, claims, passages, err := e.claimObjects(ctx, q, cks.StatusAccepted)
	if err != nil {
		return Outcome{}, err
	}
	if len(claims) == 0 {
		why := reasonNode(cks.KindRationale, cks.SemRefutes, Reasoning{Text: "no accepted claims to synthesize from", SendBackTo: llm.BackToResearch})
		return e.sendBack(ctx, q, s.Name(), cks.StatusNeedsResearch, why, "no accepted claims")
	}
	out, err := e.Model.Synthesize(ctx, llm.SynthesisInput{Question: text, Claims: claims})
	if err != nil {
		return Outcome{}, err
	}
	byID := map[string]llm.Passage{}
	for _, p := range passages {
		byID[p.ID] = p
	}
	sc := SynthesisContent{Answer: out.Answer, Model: e.Model.Name()}
	for _, id := range out.Citations {
		p, ok := byID[id]
		if !ok {
			return Outcome{}, &llm.ReplyError{Raw: string(mustJSON(out)), Err: fmt.Errorf("the answer cites %q, which no accepted claim cites", id)}
		}
		sc.Citations = append(sc.Citations, Citation{ID: p.ID, Source: p.Source, Heading: p.Heading, Text: p.Text})
	}
	node := knowledge.Attachment{Object: knowledge.NewObject{Kind: cks.KindSynthesis, Title: "answer to: " + truncate(text, 100),
		CreatedBy: s.Name()}, BaseType: cks.BaseDependsOn, SemanticType: cks.SemSynthesizes}
	for _, o := range objs {
		sc.ClaimIDs = append(sc.ClaimIDs, o.ID)
		node.Links = append(node.Links, knowledge.LinkFrom{Dst: o.ID, BaseType: cks.BaseDependsOn, SemanticType: cks.SemCites})
	}
	node.Object.Content = mustJSON(sc)
	t := knowledge.ObjectTransition{From: q.Status, To: cks.StatusAwaitingArbitration, Action: "synthesized", Agent: s.Name(),
		Attach: []knowledge.Attachment{node}, Reasoning: -1}
	if _, _, err := e.Store.TransitionObject(ctx, q.ID, q.ClaimToken, t); err != nil {
		return Outcome{}, err
	}
	return Outcome{To: cks.StatusAwaitingArbitration, Action: "synthesized"}, nil
}

// truncate returns s, or when it is longer than n bytes its start and
// "...", n bytes at most.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut at a character: half a UTF-8 sequence is not text the store takes.
	cut := n - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// Arbiter validates the latest synthesis (validate_knowledge): resolved,
// with its rationale attached (resolves), or back to research or synthesis
// with the rationale (refutes) — never a bare error.
type Arbiter struct{}

// Name returns "arbiter".
func (Arbiter) Name() string { return "arbiter" }

// Claims returns awaiting_arbitration.
func (Arbiter) Claims() []string { return []string{cks.StatusAwaitingArbitration} }

// Run validates q's latest synthesis.
func (s Arbiter) Run(ctx context.Context, e *Env, q cks.Object) (Outcome, error) {
	text, err := QuestionText(q)
	if err != nil {
		return e.park(ctx, q, s.Name(), err.Error())
	}
	syns, err := e.linked(ctx, q, cks.SemSynthesizes)
	if err != nil {
		return Outcome{}, err
	}
	if len(syns) == 0 {
		why := reasonNode(cks.KindRationale, cks.SemRefutes, Reasoning{Text: "no synthesis to validate", SendBackTo: llm.BackToSynthesis})
		return e.sendBack(ctx, q, s.Name(), cks.StatusAwaitingSynthesis, why, "no synthesis")
	}
	syn := syns[len(syns)-1]
	var sc SynthesisContent
	if err := json.Unmarshal(syn.Content, &sc); err != nil {
		return Outcome{}, fmt.Errorf("synthesis %d: %w", syn.ID, err)
	}
	_, claims, _, err := e.claimObjects(ctx, q, cks.StatusAccepted)
	if err != nil {
		return Outcome{}, err
	}
	cites := make([]string, len(sc.Citations))
	for i, c := range sc.Citations {
		cites[i] = c.ID
	}
	out, err := e.Model.Validate(ctx, llm.ValidationInput{Question: text, Answer: sc.Answer, Citations: cites, Claims: claims})
	if err != nil {
		return Outcome{}, err
	}
	r := Reasoning{Text: out.Rationale, Model: e.Model.Name(), SynthesisID: syn.ID}
	if out.Valid {
		node := reasonNode(cks.KindRationale, cks.SemResolves, r)
		node.Object.CreatedBy = s.Name()
		node.Links = []knowledge.LinkFrom{{Dst: syn.ID, BaseType: cks.BaseDependsOn, SemanticType: cks.SemSupports}}
		return e.move(ctx, q, s.Name(), cks.StatusResolved, "validated", node)
	}
	to := cks.StatusNeedsResearch
	if out.SendBackTo == llm.BackToSynthesis {
		to = cks.StatusAwaitingSynthesis
	}
	r.SendBackTo = out.SendBackTo
	node := reasonNode(cks.KindRationale, cks.SemRefutes, r)
	node.Object.CreatedBy = s.Name()
	node.Links = []knowledge.LinkFrom{{Dst: syn.ID, BaseType: cks.BaseDependsOn, SemanticType: cks.SemRefutes}}
	return e.sendBack(ctx, q, s.Name(), to, node, out.Rationale)
}
