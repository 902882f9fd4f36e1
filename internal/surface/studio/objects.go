package studio

// The knowledge inspector (ADR-007's Inference Chain Inspector and Fork Diff
// View): the object list (/objects: status and kind filters, a search, cursor
// paging, through list_objects), the object page (/objects/{id}: the question
// and its four steps, the answer with numbered citations or why it parked,
// the transition chain as a timeline with each reasoning node expanded in
// place, the linked objects, the version DAG drawn as SVG; through get_object
// and list_object_versions) and the fork diff (/objects/{id}/forks: the heads
// side by side against their merge base, field by field, or the merge that
// resolved the last fork). Every read is an operation of the table, so the
// caller's permissions hold; the studio only renders.

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/runtime/pipeline"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/knowledge"
)

// The inspector's routes.
const (
	// ObjectsPath serves the object list and, under it, the object pages
	// (/objects/{id}) and fork diffs (/objects/{id}/forks).
	ObjectsPath = "/objects"
	// ObjectFragmentPath + {id} serves only the live part of an object page
	// (status, steps, answer, timeline); the page script swaps it in when
	// the hub's events say the object moved.
	ObjectFragmentPath = "/studio/objects/"
	// ResearchPath is the research page: ask a question, watch it move.
	ResearchPath = "/research"
	// ResearchFragmentPath + {id} serves a question's progress (its steps and
	// the answer or why it parked), for the research page.
	ResearchFragmentPath = "/studio/research/"
)

// objectsPageSize is the object list's page.
const objectsPageSize = 50

// The filter choices of the object list: the knowledge vocabulary.
var (
	objectKinds    = []string{cks.KindQuestion, cks.KindClaim, cks.KindSynthesis, cks.KindCritique, cks.KindRationale, cks.KindModelReply, cks.KindInference}
	objectStatuses = []string{cks.StatusAwaitingResearch, cks.StatusNeedsResearch, cks.StatusAwaitingCritique, cks.StatusAwaitingSynthesis,
		cks.StatusAwaitingArbitration, cks.StatusResolved, cks.StatusNeedsInput,
		cks.StatusProposed, cks.StatusAccepted, cks.StatusRejected, cks.StatusDisputed}
)

// objectRow is one row of the object list.
type objectRow struct {
	ID          int64
	Kind        string
	Title       string
	Status      string
	Round       int
	HeadVersion int64
	Forked      bool
	UpdatedAt   string // RFC 3339
	Updated     string // "12s ago"
}

// objectListView is the data of the object list.
type objectListView struct {
	Kinds, Statuses []string
	// Kind, Status and Q are the filters shown; Error a refused filter's
	// message (the operation's FieldError).
	Kind, Status, Q string
	Error           string
	Rows            []objectRow
	// Next is the URL of the next page, "" on the last.
	Next string
	// Filtered says a filter is set (the empty state says so).
	Filtered bool
}

func (s *server) objectList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	v := objectListView{Kinds: objectKinds, Statuses: objectStatuses,
		Kind: q.Get("kind"), Status: q.Get("status"), Q: strings.TrimSpace(q.Get("q"))}
	v.Filtered = v.Kind != "" || v.Status != "" || v.Q != ""
	in := cks.ListObjectsInput{Q: v.Q, Limit: objectsPageSize}
	if v.Kind != "" {
		in.Kind = []string{v.Kind}
	}
	if v.Status != "" {
		in.Status = []string{v.Status}
	}
	status := http.StatusOK
	if c := q.Get("cursor"); c != "" {
		n, err := strconv.ParseInt(c, 10, 64)
		if err != nil || n < 0 {
			s.errorPage(w, r, http.StatusBadRequest, "Bad page", "The cursor "+strconv.Quote(c)+" is not an object id. Go back to the first page of the list.")
			return
		}
		in.Cursor = n
	}
	page, err := ops.ListObjects.Do(r.Context(), s.ops, &in)
	if s.forbidden(w, r, err) {
		return
	}
	var fe *cks.FieldError
	switch {
	case errors.As(err, &fe):
		v.Error, status = fe.Error(), http.StatusBadRequest
	case err != nil:
		s.logErr(r, "studio: list objects", err)
		s.errorPage(w, r, http.StatusInternalServerError, "Could not list objects",
			"The knowledge store could not be read. The error was logged on the hub; reload this page to try again.")
		return
	}
	now := s.clock.Now()
	for _, o := range page.Objects {
		v.Rows = append(v.Rows, objectRow{ID: o.ID, Kind: o.Kind, Title: objectTitle(o), Status: o.Status, Round: o.Round,
			HeadVersion: o.HeadVersion, Forked: o.Forked, UpdatedAt: o.UpdatedAt.UTC().Format(time.RFC3339),
			Updated: humanAge(now.Sub(o.UpdatedAt).Seconds())})
	}
	if page.Next != 0 {
		next := url.Values{}
		for k, val := range map[string]string{"kind": v.Kind, "status": v.Status, "q": v.Q} {
			if val != "" {
				next.Set(k, val)
			}
		}
		next.Set("cursor", strconv.FormatInt(page.Next, 10))
		v.Next = ObjectsPath + "?" + next.Encode()
	}
	s.render(w, r, status, pages["objects"], "layout", s.page("Knowledge", "objects", false, v))
}

// objectTitle is what names an object in a list: its title, a question's
// text, else its kind and id.
func objectTitle(o cks.Object) string {
	if o.Kind == cks.KindQuestion {
		if q, err := pipeline.QuestionText(o); err == nil {
			return q
		}
	}
	if o.Title != "" {
		return o.Title
	}
	return fmt.Sprintf("%s %d", o.Kind, o.ID)
}

// objectID reads the {id} path value of an object route, or answers 404.
func (s *server) objectID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	raw := r.PathValue("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		s.errorPage(w, r, http.StatusNotFound, "No such object",
			"Objects are named by a positive number, not "+strconv.Quote(raw)+". Find the object in the list of the knowledge store.")
		return 0, false
	}
	return id, true
}

// objectAt reads the object the {id} path value names (objectID,
// readObject), or answers the 404, refusal or failure and returns false.
func (s *server) objectAt(w http.ResponseWriter, r *http.Request) (cks.ObjectView, cks.VersionList, bool) {
	id, ok := s.objectID(w, r)
	if !ok {
		return cks.ObjectView{}, cks.VersionList{}, false
	}
	return s.readObject(w, r, id)
}

// readObject reads object id (get_object) and its version DAG
// (list_object_versions) in one read transaction (ops.ObjectPage), or
// answers the refusal, the 404 or the failure and returns false.
func (s *server) readObject(w http.ResponseWriter, r *http.Request, id int64) (cks.ObjectView, cks.VersionList, bool) {
	v, vl, err := ops.ObjectPage(r.Context(), s.ops, id)
	switch {
	case err == nil:
		return v, vl, true
	case s.forbidden(w, r, err):
	case errors.Is(err, cks.ErrNotFound):
		s.errorPage(w, r, http.StatusNotFound, "No such object",
			fmt.Sprintf("The knowledge store has no object %d. Find the object in the list, or ask a question on the research page.", id))
	default:
		s.logErr(r, "studio: read object", err, "object_id", id)
		s.errorPage(w, r, http.StatusInternalServerError, "Could not read the object",
			"The knowledge store could not be read. The error was logged on the hub; reload this page to try again.")
	}
	return cks.ObjectView{}, cks.VersionList{}, false
}

// objectPageView is the data of an object page.
type objectPageView struct {
	Live objectLive
	// DAG is the version graph, drawn; Versions how many versions.
	DAG      template.HTML
	Versions int
	// Forks links the fork diff: the object is forked, or a merge resolved
	// a fork of it.
	Forks      bool
	ForkedNow  bool
	Linked     []linkedView
	ContentRaw string // the content, indented, for kinds the page does not lay out
}

// objectLive is the part of an object page that follows the object.
type objectLive struct {
	ID                   int64
	Kind, Title, Status  string
	Heading              string // the title, a question's text, else kind and id
	Round                int
	CreatedBy            string
	CreatedAt, UpdatedAt string
	Created, Updated     string
	ClaimedBy            string
	// ClaimedAt (RFC 3339) and Claimed ("3m ago") say when the claim was
	// taken or last renewed: the lease reaper releases one older than its
	// stale window (ADR-007 §2), for another worker to claim.
	ClaimedAt, Claimed string
	HeadVersion        int64
	Summary            *questionSummary // questions only
	Text               string           // a claim's or reasoning node's text
	Citations          []citationView   // a claim's
	Timeline           []timelineEntry
	LogArchived        bool // a status but no log: the retention sweeper archived it (CKS_RETENTION_KNOWLEDGE)
	Terminal           bool // a resolved or parked question: nothing more comes
	QuestionCorpus     string
	ReasoningOf        *nodeView // a reasoning node's own page: its verdicts and edges
	SynthesisAnswer    []answerPart
	SynthesisCitations []citationView
}

// questionSummary is a question's progress: its four steps, and the answer
// or why it parked.
type questionSummary struct {
	ID       int64
	Question string
	Status   string
	Round    int
	Steps    []stepView
	Answer   *answerView
	Parked   *parkedView
	Terminal bool
}

// stepView is one step of the research pipeline, as a question stands.
type stepView struct {
	N     int
	Name  string // "researcher"
	Label string // "Research"
	// State is done, active (the question waits for it or it works on
	// it), parked (it parked the question) or pending.
	State string
}

// answerView is a resolved question's answer: its text with numbered
// citations, and the passages they cite.
type answerView struct {
	SynthesisID int64
	Model       string
	Parts       []answerPart
	Citations   []citationView
	Rationale   string // the Arbiter's, when it validated the answer
}

// answerPart is a run of an answer's text, or a citation mark ([N]).
type answerPart struct {
	Text string
	Cite int // N, when the part is a citation mark
}

// citationView is one cited passage.
type citationView struct {
	N                   int
	ID, Source, Heading string
	Text                string
}

// parkedView says why a question parked in needs_input.
type parkedView struct {
	By, Reason string
	NodeID     int64
}

// timelineEntry is one entry of an object's transition log.
type timelineEntry struct {
	Seq      int64
	TS, Time string
	Agent    string
	Action   string
	From, To string
	Round    int
	Node     *nodeView    // the entry's reasoning node, expanded in place
	Produced []linkedView // objects the step made at the same moment
	Changed  bool         // the status changed
}

// nodeView is a reasoning node (or a synthesis) laid out in place.
type nodeView struct {
	ID          int64
	Kind, Title string
	Text        string
	Model       string
	SendBackTo  string
	SynthesisID int64
	Verdicts    []verdictView
	Edges       []edgeView
	Answer      []answerPart
	Citations   []citationView
	Conflicts   []conflictView
}

// verdictView is a critique's verdict on one claim.
type verdictView struct {
	ClaimID int64
	Claim   string
	Accept  bool
	Reason  string
}

// conflictView is one true conflict a merge decided.
type conflictView struct {
	Path, Base, Ours, Theirs, Chosen string
}

// edgeView is an edge seen from one of its ends.
type edgeView struct {
	// Out: from this node to Other; else from Other to it.
	Out            bool
	Other          int64
	OtherKind      string
	OtherTitle     string
	Base, Semantic string
	Weight         string // "" when the edge has none
}

// linkedView is an object linked to the page's object.
type linkedView struct {
	ID                  int64
	Kind, Title, Status string
	Semantic            string
	Out                 bool
	Weight              string
}

func (s *server) objectPage(w http.ResponseWriter, r *http.Request) {
	v, vl, ok := s.objectAt(w, r)
	if !ok {
		return
	}
	live := s.objectLive(v)
	pv := objectPageView{Live: live, DAG: versionDAG(vl), Versions: len(vl.Versions), ForkedNow: vl.Forked,
		Linked: linkedObjects(v)}
	pv.Forks = vl.Forked || lastMerge(vl) != nil
	if live.Summary == nil && live.Text == "" && live.ReasoningOf == nil && live.SynthesisAnswer == nil {
		pv.ContentRaw = indentJSON(v.Content)
	}
	p := s.page(fmt.Sprintf("%s %d", titleCase(v.Kind), v.ID), "objects", true, pv)
	s.render(w, r, http.StatusOK, pages["object"], "layout", p)
}

// objectFragment serves the live part of an object page.
func (s *server) objectFragment(w http.ResponseWriter, r *http.Request) {
	v, _, ok := s.objectAt(w, r)
	if !ok {
		return
	}
	w.Header().Set("X-Studio-Fragment", "object")
	s.render(w, r, http.StatusOK, pages["object"], "object-live", s.objectLive(v))
}

// titleCase capitalises a kind for a title ("question" → "Question").
func titleCase(s string) string {
	if s == "" {
		return "Object"
	}
	s = strings.ReplaceAll(s, "_", " ")
	return strings.ToUpper(s[:1]) + s[1:]
}

// indentJSON indents a JSON value for display (as it is when it cannot).
func indentJSON(b []byte) string {
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return string(b)
	}
	return out.String()
}

// objectLive lays out what an object page shows of v that changes as the
// object moves.
func (s *server) objectLive(v cks.ObjectView) objectLive {
	now := s.clock.Now()
	l := objectLive{ID: v.ID, Kind: v.Kind, Title: v.Title, Heading: objectTitle(v.Object), Status: v.Status, Round: v.Round, CreatedBy: v.CreatedBy,
		CreatedAt: v.CreatedAt.UTC().Format(time.RFC3339), UpdatedAt: v.UpdatedAt.UTC().Format(time.RFC3339),
		Created: humanAge(now.Sub(v.CreatedAt).Seconds()), Updated: humanAge(now.Sub(v.UpdatedAt).Seconds()),
		ClaimedBy: v.ClaimedBy, HeadVersion: v.HeadVersion}
	if v.ClaimedBy != "" && !v.ClaimedAt.IsZero() {
		l.ClaimedAt, l.Claimed = v.ClaimedAt.UTC().Format(time.RFC3339), humanAge(now.Sub(v.ClaimedAt).Seconds())
	}
	byID := reasoningByID(v)
	switch v.Kind {
	case cks.KindQuestion:
		l.Summary = questionSummaryOf(v, byID)
		l.Terminal = l.Summary.Terminal
		var q pipeline.Question
		if json.Unmarshal(v.Content, &q) == nil {
			l.QuestionCorpus = q.Corpus
		}
	case cks.KindClaim:
		var c pipeline.ClaimContent
		if json.Unmarshal(v.Content, &c) == nil {
			l.Text = c.Text
			l.Citations = citations(c.Citations)
		}
	case cks.KindSynthesis:
		var c pipeline.SynthesisContent
		if json.Unmarshal(v.Content, &c) == nil {
			l.SynthesisAnswer, l.SynthesisCitations = answerOf(c)
		}
	case cks.KindCritique, cks.KindRationale:
		l.ReasoningOf = nodeOf(v.Object, byID)
	}
	l.Timeline = timeline(v.Object, byID, v.Reasoning)
	// Every object with a status logged its creation: an empty log is one
	// the retention sweeper archived.
	l.LogArchived = v.Status != "" && len(v.Log) == 0
	return l
}

// questionSummaryOf lays out a question's progress: each step of the
// pipeline (pipeline.Steps, in order) done, active, parked or pending by
// the question's status and the step that parked it; the answer of a
// resolved question; why a parked one parked.
func questionSummaryOf(v cks.ObjectView, byID map[int64]cks.Object) *questionSummary {
	qs := &questionSummary{ID: v.ID, Status: v.Status, Round: v.Round}
	qs.Question, _ = pipeline.QuestionText(v.Object)
	if qs.Question == "" {
		qs.Question = objectTitle(v.Object)
	}
	steps := pipeline.Steps()
	active := -1
	for i, st := range steps {
		if slices.Contains(st.Claims(), v.Status) {
			active = i
		}
	}
	parkedBy := ""
	if v.Status == cks.StatusNeedsInput && len(v.Log) > 0 {
		parkedBy = v.Log[len(v.Log)-1].Agent
	}
	labels := map[string]string{"researcher": "Research", "critic": "Critique", "synthesizer": "Synthesis", "arbiter": "Arbitration"}
	parkedAt := -1
	for i, st := range steps {
		if st.Name() == parkedBy {
			parkedAt = i
		}
	}
	for i, st := range steps {
		sv := stepView{N: i + 1, Name: st.Name(), Label: cmp.Or(labels[st.Name()], titleCase(st.Name()))}
		switch {
		case v.Status == cks.StatusResolved:
			sv.State = "done"
		case v.Status == cks.StatusNeedsInput && i == parkedAt:
			sv.State = "parked"
		case v.Status == cks.StatusNeedsInput && (parkedAt < 0 || i < parkedAt):
			sv.State = "done"
		case v.Status == cks.StatusNeedsInput:
			sv.State = "pending"
		case active >= 0 && i < active:
			sv.State = "done"
		case i == active:
			sv.State = "active"
		default:
			sv.State = "pending"
		}
		qs.Steps = append(qs.Steps, sv)
	}
	switch v.Status {
	case cks.StatusResolved:
		qs.Terminal = true
		qs.Answer = answerFor(v, byID)
	case cks.StatusNeedsInput:
		qs.Terminal = true
		qs.Parked = parkedFor(v, byID, parkedBy)
	}
	return qs
}

// answerFor is a resolved question's answer: the synthesis the Arbiter's
// last rationale validated, else the newest synthesis linked to it.
func answerFor(v cks.ObjectView, byID map[int64]cks.Object) *answerView {
	var synthID int64
	rationale := ""
	for _, e := range slices.Backward(v.Log) {
		if e.ReasoningNodeID == nil {
			continue
		}
		node, ok := byID[*e.ReasoningNodeID]
		if !ok || node.Kind != cks.KindRationale {
			continue
		}
		var r pipeline.Reasoning
		if json.Unmarshal(node.Content, &r) == nil && r.SynthesisID != 0 {
			synthID, rationale = r.SynthesisID, r.Text
			break
		}
	}
	if synthID == 0 {
		for _, o := range v.Reasoning {
			if o.Kind == cks.KindSynthesis {
				synthID = o.ID
			}
		}
	}
	syn, ok := byID[synthID]
	if !ok {
		return nil
	}
	var c pipeline.SynthesisContent
	if json.Unmarshal(syn.Content, &c) != nil {
		return nil
	}
	a := &answerView{SynthesisID: syn.ID, Model: c.Model, Rationale: rationale}
	a.Parts, a.Citations = answerOf(c)
	return a
}

// parkedFor says why a question parked: the text of the reasoning node of
// its last log entry, else of the newest node linked to it with parks.
func parkedFor(v cks.ObjectView, byID map[int64]cks.Object, by string) *parkedView {
	p := &parkedView{By: by}
	if n := len(v.Log); n > 0 && v.Log[n-1].ReasoningNodeID != nil {
		p.NodeID = *v.Log[n-1].ReasoningNodeID
	}
	if p.NodeID == 0 {
		for _, e := range v.Edges {
			if e.Dst == v.ID && e.SemanticType == cks.SemParks {
				p.NodeID = e.Src
			}
		}
	}
	if node, ok := byID[p.NodeID]; ok {
		p.Reason = reasoningText(node)
	}
	if p.Reason == "" {
		p.Reason = "The pipeline recorded no reason."
	}
	return p
}

// reasoningText is the text of a reasoning node (its content's "text"),
// else its title.
func reasoningText(o cks.Object) string {
	var r struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(o.Content, &r) == nil && r.Text != "" {
		return r.Text
	}
	return o.Title
}

// citeMark finds the marks "[passage id]" an answer cites its passages by.
var citeMark = regexp.MustCompile(`\[([^\[\]\s]+)\]`)

// answerOf splits a synthesis's answer into text and numbered citation
// marks: each passage it cites, in order of first mention, gets the next
// number; a mark of no cited passage stays text. Passages never marked
// are listed after the marked ones.
func answerOf(c pipeline.SynthesisContent) ([]answerPart, []citationView) {
	index := map[string]int{}
	for i, ct := range c.Citations {
		index[ct.ID] = i
	}
	number := map[string]int{}
	var order []int
	var parts []answerPart
	text := c.Answer
	for {
		loc := citeMark.FindStringSubmatchIndex(text)
		if loc == nil {
			break
		}
		id := text[loc[2]:loc[3]]
		i, ok := index[id]
		if !ok {
			parts = append(parts, answerPart{Text: text[:loc[1]]})
			text = text[loc[1]:]
			continue
		}
		if _, seen := number[id]; !seen {
			number[id] = len(order) + 1
			order = append(order, i)
		}
		parts = append(parts, answerPart{Text: strings.TrimRight(text[:loc[0]], " ")}, answerPart{Cite: number[id]})
		text = text[loc[1]:]
	}
	parts = append(parts, answerPart{Text: text})
	for i := range c.Citations {
		if !slices.Contains(order, i) {
			order = append(order, i)
		}
	}
	cites := make([]citationView, len(order))
	for n, i := range order {
		ct := c.Citations[i]
		cites[n] = citationView{N: n + 1, ID: ct.ID, Source: ct.Source, Heading: ct.Heading, Text: ct.Text}
	}
	return parts, cites
}

// citations numbers a claim's passages in order.
func citations(cs []pipeline.Citation) []citationView {
	out := make([]citationView, len(cs))
	for i, ct := range cs {
		out[i] = citationView{N: i + 1, ID: ct.ID, Source: ct.Source, Heading: ct.Heading, Text: ct.Text}
	}
	return out
}

// weightOf renders an edge's weight ("" for none).
func weightOf(w *float64) string {
	if w == nil {
		return ""
	}
	return strconv.FormatFloat(*w, 'g', 4, 64)
}

// nodeOf lays out reasoning node o: its text, a critique's verdicts (with
// the claims' texts), an Arbiter's synthesis and send-back, a merge's
// conflicts, a synthesis's answer, and its edges with their weights.
func nodeOf(o cks.Object, byID map[int64]cks.Object) *nodeView {
	n := &nodeView{ID: o.ID, Kind: o.Kind, Title: o.Title}
	var r struct {
		pipeline.Reasoning
		Conflicts []knowledge.Conflict `json:"conflicts"`
	}
	if json.Unmarshal(o.Content, &r) == nil {
		n.Text, n.Model, n.SendBackTo, n.SynthesisID = r.Text, r.Model, r.SendBackTo, r.SynthesisID
		for _, vd := range r.Verdicts {
			vv := verdictView{ClaimID: vd.ClaimID, Accept: vd.Accept, Reason: vd.Reason}
			if c, ok := byID[vd.ClaimID]; ok {
				vv.Claim = objectTitle(c)
			}
			n.Verdicts = append(n.Verdicts, vv)
		}
		for _, c := range r.Conflicts {
			n.Conflicts = append(n.Conflicts, conflictView{Path: c.Path, Base: rawOrAbsent(c.Base), Ours: rawOrAbsent(c.Ours),
				Theirs: rawOrAbsent(c.Theirs), Chosen: rawOrAbsent(c.Chosen)})
		}
	}
	if o.Kind == cks.KindSynthesis {
		var c pipeline.SynthesisContent
		if json.Unmarshal(o.Content, &c) == nil {
			n.Answer, n.Citations = answerOf(c)
			n.Model = c.Model
		}
	}
	for _, e := range o.Edges {
		ev := edgeView{Out: e.Src == o.ID, Base: e.BaseType, Semantic: e.SemanticType, Weight: weightOf(e.Weight)}
		ev.Other = e.Dst
		if !ev.Out {
			ev.Other = e.Src
		}
		if other, ok := byID[ev.Other]; ok {
			ev.OtherKind, ev.OtherTitle = other.Kind, objectTitle(other)
		}
		n.Edges = append(n.Edges, ev)
	}
	return n
}

// rawOrAbsent renders one side of a conflict.
func rawOrAbsent(b json.RawMessage) string {
	if b == nil {
		return "(absent)"
	}
	return string(b)
}

// timeline lays out o's transition log, oldest first: each entry with the
// status it moved from and to, its reasoning node expanded, and the
// objects its agent made at the same moment (a Researcher's claims, a
// Synthesizer's synthesis) listed.
func timeline(o cks.Object, byID map[int64]cks.Object, linked []cks.Object) []timelineEntry {
	var out []timelineEntry
	from := ""
	for _, e := range o.Log {
		te := timelineEntry{Seq: e.Seq, TS: e.TS.UTC().Format(time.RFC3339Nano), Time: e.TS.UTC().Format("2006-01-02 15:04:05.000"),
			Agent: e.Agent, Action: e.Action, From: from, To: e.TransitionedTo, Round: e.Round, Changed: from != e.TransitionedTo}
		from = e.TransitionedTo
		if e.ReasoningNodeID != nil {
			if node, ok := byID[*e.ReasoningNodeID]; ok {
				te.Node = nodeOf(node, byID)
			} else {
				te.Node = &nodeView{ID: *e.ReasoningNodeID, Kind: "reasoning", Text: "(not linked to this object)"}
			}
		}
		for _, l := range linked {
			if l.CreatedBy == e.Agent && l.CreatedAt.Equal(e.TS) && (te.Node == nil || l.ID != te.Node.ID) {
				if l.Kind == cks.KindSynthesis && te.Node == nil {
					te.Node = nodeOf(l, byID)
					continue
				}
				te.Produced = append(te.Produced, linkedView{ID: l.ID, Kind: l.Kind, Title: objectTitle(l), Status: l.Status})
			}
		}
		out = append(out, te)
	}
	return out
}

// linkedObjects lists the objects at the other end of v's edges, with the
// edge's type and weight.
func linkedObjects(v cks.ObjectView) []linkedView {
	byID := map[int64]cks.Object{}
	for _, o := range v.Reasoning {
		byID[o.ID] = o
	}
	var out []linkedView
	for _, e := range v.Edges {
		lv := linkedView{Out: e.Src == v.ID, Semantic: cmp.Or(e.SemanticType, e.BaseType), Weight: weightOf(e.Weight)}
		lv.ID = e.Dst
		if !lv.Out {
			lv.ID = e.Src
		}
		if o, ok := byID[lv.ID]; ok {
			lv.Kind, lv.Title, lv.Status = o.Kind, objectTitle(o), o.Status
		}
		out = append(out, lv)
	}
	return out
}

// forbiddenReason is why the caller may not call op with in ("" when it
// may): the refusal's message, for a control shown disabled.
func (s *server) forbiddenReason(r *http.Request, op ops.Operation, in any) string {
	err := ops.Authorize(r.Context(), s.ops, op, in)
	if errors.Is(err, auth.ErrForbidden) {
		return err.Error()
	}
	return ""
}
