package studio

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/runtime/sweeper"
	"github.com/cks-dev/cks/internal/service/auth"
)

// sweepersView is the data of the "sweepers" block.
type sweepersView struct {
	// Configured is false when the studio has no sweeper controller; the block
	// then says so instead of showing cards.
	Configured       bool
	Cards            []sweeperCard
	Running, Stopped int
	// Failed means the controller could not list the sweepers.
	Failed bool
	// Leader is the hub running the passes (the maintenance leader), ""
	// when none holds it; Standby says this hub's loops stand by for it.
	Leader  string
	Standby bool
}

// sweeperCard is one sweeper's status, formatted for display.
type sweeperCard struct {
	ID            string
	Running       bool
	ConfigEnabled bool
	// Override is the stored desired_running: "none", "start" or "stop".
	Override string
	Interval string // "30s", "5m"
	// LastRun is "never" before the first completed pass, else "12s ago".
	LastRun   string
	LastRunAt string // RFC 3339, "" before the first pass
	// LastCount and LastDuration are "—" before the first completed pass.
	LastCount    string
	LastDuration string
	RunCount     int64
	LastError    string
	// Standby: the loop runs, but the maintenance leader runs its passes.
	Standby bool
	// Action is the button the card offers: "start", "stop", or "" for a
	// sweeper disabled by configuration.
	Action string
	// Refused says why the viewer may not use the Action button (the
	// permission start_agent or stop_agent needs): it is shown disabled
	// with it.
	Refused string
	// Details are what the last pass reported beyond its count (e.g.
	// graph_health's orphans and cycles).
	Details []sweeper.Detail
	// Passes are the newest CardPasses of the sweeper's recorded passes
	// (whichever hub ran them).
	Passes []passRow
}

// CardPasses is how many recent passes a sweeper card lists (the charts
// page draws all list_agents answers).
const CardPasses = 5

// passRow is one recent pass, formatted for display.
type passRow struct {
	At, Age, Duration, Count, Error string
	// Hub is the id of the hub that ran it, "" when unknown.
	Hub string
}

func (s *server) sweepersFragment(w http.ResponseWriter, r *http.Request) {
	v, status, err := s.sweepers(r)
	if s.forbidden(w, r, err) {
		return
	}
	w.Header().Set("X-Studio-Fragment", "sweepers")
	s.render(w, r, status, pages["panel"], "sweepers", v)
}

// sweepers reads every sweeper's status (list_agents, registration order)
// and formats it. Only a refusal is returned as an error.
func (s *server) sweepers(r *http.Request) (sweepersView, int, error) {
	if s.ops.Sweepers == nil {
		return sweepersView{}, http.StatusOK, nil
	}
	list, err := ops.ListAgents.Do(r.Context(), s.ops, &struct{}{})
	if errors.Is(err, auth.ErrForbidden) {
		return sweepersView{}, http.StatusForbidden, err
	}
	if err != nil {
		s.logErr(r, "studio: list sweepers", err)
		return sweepersView{Configured: true, Failed: true}, http.StatusInternalServerError, nil
	}
	sts := list.Sweepers
	now := s.clock.Now()
	v := sweepersView{Configured: true, Cards: make([]sweeperCard, 0, len(sts))}
	for _, st := range sts {
		c := sweeperCard{
			ID:            st.AgentID,
			Running:       st.Running,
			ConfigEnabled: st.ConfigEnabled,
			Override:      overrideText(st.DesiredRunning),
			Interval:      shortDuration(time.Duration(st.IntervalS * float64(time.Second))),
			LastRun:       "never",
			LastCount:     "—",
			LastDuration:  "—",
			RunCount:      st.RunCount,
			Details:       sweeper.DetailList(st.Details),
			Standby:       st.Standby,
		}
		v.Leader = st.Leader
		v.Standby = v.Standby || st.Standby
		if st.LastRunAt != nil {
			c.LastRun = humanAge(now.Sub(*st.LastRunAt).Seconds())
			c.LastRunAt = st.LastRunAt.UTC().Format(time.RFC3339)
		}
		if st.LastResultCount != nil {
			c.LastCount = strconv.Itoa(*st.LastResultCount)
		}
		if st.LastRunDurationMS != nil {
			c.LastDuration = millis(*st.LastRunDurationMS)
		}
		if st.LastError != nil {
			c.LastError = *st.LastError
		}
		for _, p := range st.RecentPasses[:min(len(st.RecentPasses), CardPasses)] {
			c.Passes = append(c.Passes, passRow{At: p.At.UTC().Format(time.RFC3339), Age: humanAge(now.Sub(p.At).Seconds()),
				Duration: millis(p.DurationMS), Count: strconv.Itoa(p.Count), Error: p.Error, Hub: p.Hub})
		}
		switch {
		case !st.ConfigEnabled:
		case st.Running:
			c.Action = "stop"
		default:
			c.Action = "start"
		}
		if op := map[string]ops.Operation{"start": ops.StartAgent, "stop": ops.StopAgent}[c.Action]; op != nil {
			if err := ops.Authorize(r.Context(), s.ops, op, &cks.SweeperInput{AgentID: st.AgentID}); err != nil {
				c.Refused = err.Error()
			}
		}
		if st.Running {
			v.Running++
		} else {
			v.Stopped++
		}
		v.Cards = append(v.Cards, c)
	}
	return v, http.StatusOK, nil
}

func overrideText(b *bool) string {
	switch {
	case b == nil:
		return "none"
	case *b:
		return "start"
	default:
		return "stop"
	}
}

// shortDuration drops the zero tails of time.Duration's format: 5m, 1h30m, 24h.
func shortDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0 && d > time.Hour:
		return fmt.Sprintf("%dh%dm", d/time.Hour, d%time.Hour/time.Minute)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	default:
		return d.String()
	}
}

// millis formats a pass duration: "0.4 ms", "12 ms", "1.25 s".
func millis(ms float64) string {
	switch {
	case ms < 10:
		return strconv.FormatFloat(ms, 'f', 1, 64) + " ms"
	case ms < 1000:
		return strconv.FormatFloat(ms, 'f', 0, 64) + " ms"
	default:
		return strconv.FormatFloat(ms/1000, 'f', 2, 64) + " s"
	}
}
