package studio

import (
	"errors"
	"net/http"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
)

// The Flow control page's routes (issue 42 item 7).
const (
	// FlowPath is the Flow control page: the task types paused fleet-wide
	// (list_paused_types) and the schedules (list_schedules), with their
	// operator verbs.
	FlowPath = "/flow"
	// FlowFragmentPath serves the page's sections alone; the page script
	// morphs them in on "tasks" events (a type paused or resumed on any
	// hub, a task a schedule created) and "schedules" events (a schedule
	// created, paused, resumed, triggered or deleted on any hub).
	FlowFragmentPath = "/studio/flow"
)

// flowView is the data of the Flow control page: one field per section,
// each drawn by a template block of its own (flow.html's "flow" lists
// them), all in the one live region.
type flowView struct {
	Paused    pausedView
	Limits    limitsView
	Schedules schedulesView
}

// limitsView is the data of the "limits" block: the concurrency limits
// (list_limits), each with its keys held now.
type limitsView struct {
	Limits []limitRow
	Failed bool
	// SetRefused says why the viewer may not set a limit (control on no
	// node of /limits): the form is shown disabled with it.
	SetRefused string
}

// limitRow is a limit with its keys held now, each with the share of the
// cap it holds (for its bar), and why the viewer may not delete it.
type limitRow struct {
	cks.LimitStatus
	Keys    []keyBar
	Refused string
}

// keyBar is one key held (or started, under a rate) under a limit:
// Percent of the cap, 0 to 100; Full at the cap or the rate.
type keyBar struct {
	cks.KeyRunning
	Percent int
	Full    bool
}

// pausedView is the data of the "paused-types" block.
type pausedView struct {
	Types []pausedRow
	// Failed means the paused types could not be read (logged).
	Failed bool
	// PauseRefused says why the viewer may not pause a type (control on no
	// node of /types): the form is shown disabled with it.
	PauseRefused string
}

// pausedRow is a paused type with why the viewer may not resume it
// ("" when they may).
type pausedRow struct {
	pausedType
	Refused string
}

// schedulesView is the data of the "schedules" block.
type schedulesView struct {
	// Configured is false when the studio has no schedules service.
	Configured bool
	Failed     bool
	Cards      []scheduleCard
}

// scheduleCard is one schedule, formatted for display.
type scheduleCard struct {
	Name, Cron, TimeZone, Misfire string
	// TaskType and TaskTitle are of its task template.
	TaskType, TaskTitle string
	Paused              bool
	PausedBy, CreatedBy string
	// NextRuns are its next cks.ScheduleNextRuns slots (none while paused).
	NextRuns []timeField
	// LastSlot is the latest slot it dealt with (fired or skipped);
	// LastFired and LastTask the last fire (a slot's or a trigger's) and
	// the task it created. All zero before the first.
	LastSlot, LastFired timeField
	LastTask            int64
	// Refused says why the viewer may not pause, resume, trigger or delete
	// it (control on /schedules/NAME): the buttons are shown disabled with
	// it.
	Refused string
}

func (s *server) flowPage(w http.ResponseWriter, r *http.Request) {
	v, status, err := s.flow(r)
	if s.forbidden(w, r, err) {
		return
	}
	s.render(w, r, status, pages["flow"], "layout", s.page("Flow control", "flow", true, v))
}

func (s *server) flowFragment(w http.ResponseWriter, r *http.Request) {
	v, status, err := s.flow(r)
	if s.forbidden(w, r, err) {
		return
	}
	w.Header().Set("X-Studio-Fragment", "flow")
	s.render(w, r, status, pages["flow"], "flow", v)
}

// flow reads the page's sections, each with what the viewer may do to it.
// Only a refusal of a read is returned as an error (the 403 page); any
// other failure is its section's Failed.
func (s *server) flow(r *http.Request) (flowView, int, error) {
	ctx := r.Context()
	now := s.clock.Now()
	var v flowView
	status := http.StatusOK
	ts, err := s.pausedTypes(ctx, now)
	switch {
	case errors.Is(err, auth.ErrForbidden):
		return v, http.StatusForbidden, err
	case err != nil:
		s.logErr(r, "studio: list paused types", err)
		v.Paused.Failed, status = true, http.StatusInternalServerError
	}
	for _, t := range ts {
		row := pausedRow{pausedType: t}
		if err := ops.Authorize(ctx, s.ops, ops.ResumeType, &cks.TypeInput{Type: t.Type}); err != nil {
			row.Refused = err.Error()
		}
		v.Paused.Types = append(v.Paused.Types, row)
	}
	if err := auth.RequireWithin(ctx, auth.PermControl, auth.ResourceTypes); err != nil {
		v.Paused.PauseRefused = err.Error()
	}
	lv, err := s.limits(r)
	switch {
	case errors.Is(err, auth.ErrForbidden):
		return v, http.StatusForbidden, err
	case err != nil:
		s.logErr(r, "studio: list limits", err)
		lv.Failed, status = true, http.StatusInternalServerError
	}
	v.Limits = lv
	if s.ops.Schedules == nil {
		return v, status, nil
	}
	v.Schedules.Configured = true
	l, err := ops.ListSchedules.Do(ctx, s.ops, &struct{}{})
	switch {
	case errors.Is(err, auth.ErrForbidden):
		return v, http.StatusForbidden, err
	case err != nil:
		s.logErr(r, "studio: list schedules", err)
		v.Schedules.Failed, status = true, http.StatusInternalServerError
	}
	for _, sc := range l.Schedules {
		c := scheduleCard{Name: sc.Name, Cron: sc.Cron, TimeZone: sc.TimeZone, Misfire: sc.Misfire, TaskType: sc.Task.Type,
			TaskTitle: sc.Task.Title, Paused: sc.Paused, PausedBy: sc.PausedBy, CreatedBy: sc.CreatedBy, LastTask: sc.LastTaskID}
		for _, t := range sc.NextRuns {
			c.NextRuns = append(c.NextRuns, at(now, t))
		}
		if sc.LastSlot != nil {
			c.LastSlot = at(now, *sc.LastSlot)
		}
		if sc.LastFiredAt != nil {
			c.LastFired = at(now, *sc.LastFiredAt)
		}
		if err := ops.Authorize(ctx, s.ops, ops.PauseSchedule, &cks.ScheduleInput{Name: sc.Name}); err != nil {
			c.Refused = err.Error()
		}
		v.Schedules.Cards = append(v.Schedules.Cards, c)
	}
	return v, status, nil
}

// limits reads the limits section: every limit with its held keys as bars
// of its cap, and what the viewer may do.
func (s *server) limits(r *http.Request) (limitsView, error) {
	ctx := r.Context()
	var v limitsView
	l, err := ops.ListLimits.Do(ctx, s.ops, &struct{}{})
	if err != nil {
		return v, err
	}
	for _, st := range l.Limits {
		row := limitRow{LimitStatus: st}
		for _, k := range st.Keys {
			b := keyBar{KeyRunning: k, Full: st.Full(k)}
			if st.MaxRunning > 0 {
				b.Percent = min(100, 100*k.Running/st.MaxRunning)
			}
			row.Keys = append(row.Keys, b)
		}
		if err := ops.Authorize(ctx, s.ops, ops.DeleteLimit, &cks.LimitNameInput{Name: st.Name}); err != nil {
			row.Refused = err.Error()
		}
		v.Limits = append(v.Limits, row)
	}
	if err := auth.RequireWithin(ctx, auth.PermControl, auth.ResourceLimits); err != nil {
		v.SetRefused = err.Error()
	}
	return v, nil
}
