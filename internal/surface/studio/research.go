package studio

// The research page: ask the research pipeline a question (submit_research),
// then watch it move through its four steps live and read the answer or why
// it parked. The page script posts the question to the operation's route
// and follows the question's progress fragment on the hub's events.

import (
	"net/http"
	"strconv"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/ops"
)

// researchView is the data of the research page.
type researchView struct {
	// Disabled is why the caller may not ask (the form's button is
	// disabled with it); "" when it may.
	Disabled string
	// MaxQuestion is the question's limit in bytes, for the form.
	MaxQuestion int
	// Progress is the question the page follows (?id=N), if any.
	Progress *questionSummary
	// Watch is the id Progress follows, 0 for none.
	Watch int64
}

func (s *server) research(w http.ResponseWriter, r *http.Request) {
	v := researchView{MaxQuestion: 2000,
		Disabled: s.forbiddenReason(r, ops.SubmitResearch, &cks.SubmitResearchInput{Question: "?"})}
	if raw := r.URL.Query().Get("id"); raw != "" {
		id, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || id <= 0 {
			s.errorPage(w, r, http.StatusNotFound, "No such question",
				"Questions are named by a positive number, not "+strconv.Quote(raw)+". Ask a new question on the research page.")
			return
		}
		ov, _, ok := s.readObject(w, r, id)
		if !ok {
			return
		}
		if ov.Kind != cks.KindQuestion {
			s.errorPage(w, r, http.StatusNotFound, "Not a question",
				"Object "+raw+" is a "+ov.Kind+", not a research question. Open it in the knowledge inspector, or ask a new question here.")
			return
		}
		v.Watch = id
		v.Progress = questionSummaryOf(ov, reasoningByID(ov))
	}
	s.render(w, r, http.StatusOK, pages["research"], "layout", s.page("Research", "research", true, v))
}

// researchFragment serves a question's progress.
func (s *server) researchFragment(w http.ResponseWriter, r *http.Request) {
	ov, _, ok := s.objectAt(w, r)
	if !ok {
		return
	}
	w.Header().Set("X-Studio-Fragment", "research")
	s.render(w, r, http.StatusOK, pages["research"], "research-progress", questionSummaryOf(ov, reasoningByID(ov)))
}

// reasoningByID indexes v and the objects linked to it by id.
func reasoningByID(v cks.ObjectView) map[int64]cks.Object {
	byID := map[int64]cks.Object{v.ID: v.Object}
	for _, o := range v.Reasoning {
		byID[o.ID] = o
	}
	return byID
}
