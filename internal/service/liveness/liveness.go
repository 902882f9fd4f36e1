// Package liveness answers "is this agent process running?" (ADR-014). Processes
// write heartbeats to cks_agent_liveness; this package reads them back and
// computes each instance's status at read time with the TTL rule, so no cleanup
// job is ever needed.
package liveness

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cks-dev/cks/internal/driver"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/clock"
)

// TTLFactor is how many liveness intervals may pass without a heartbeat before
// an instance reads as stopped: one missed tick is absorbed without flapping.
const TTLFactor = 3

// KnownKinds returns the kinds of the agent processes cks itself runs
// (cks agent KIND), sorted. A process of any other kind reports over the
// API (Report), and every kind is listed, read and stopped alike.
func KnownKinds() []string {
	return []string{"critic", "enrichment", "exec", "fork_resolution", "pipeline"}
}

// StatusAt applies the TTL rule: alive iff the instance has not exited and
// now - last_heartbeat_at <= 3 × interval, that is now <= AliveUntil(r).
func StatusAt(r cks.AgentLiveness, now time.Time) cks.ProcessStatus {
	if until := AliveUntil(r); !until.IsZero() && !now.After(until) {
		return cks.ProcessAlive
	}
	return cks.ProcessStopped
}

// AliveUntil is the last time the TTL rule reads r alive: its last
// heartbeat plus 3 × its interval, at the microsecond the backends store
// (so that the stored alive_until a listing selects by and StatusAt agree);
// zero once r exited.
func AliveUntil(r cks.AgentLiveness) time.Time {
	if !r.ExitedAt.IsZero() {
		return time.Time{}
	}
	ttl := time.Duration(TTLFactor * r.LivenessIntervalS * float64(time.Second))
	return driver.Time(driver.Time(r.LastHeartbeatAt).Add(ttl))
}

// Service is process liveness over a driver: the heartbeat rows of ADR-014
// and the remote stop of ADR-016, every rule of them here, once for both
// dialects — the validation of a row, the upsert that never changes
// started_at or desired_state (the driver's LivenessUpsert leaves both), the
// not-found answers, a stop request that sets desired_state and publishes
// cks.TopicAgentStop in one transaction — and the processes as read with an
// injected clock (status by the TTL rule). It is the one place the API, MCP
// tools, studio and metrics get process state from. Writes run in a driver
// transaction (so the driver remembers their storage faults); reads run on
// the driver's pool.
type Service struct {
	db    driver.Driver
	clock clock.Clock
}

// NewService returns the liveness of db, reading time from c (the system
// clock when nil).
func NewService(db driver.Driver, c clock.Clock) *Service {
	if c == nil {
		c = clock.System{}
	}
	return &Service{db: db, clock: c}
}

func (s *Service) annotate(r cks.AgentLiveness, now time.Time) cks.Process {
	return cks.Process{AgentLiveness: r, Status: StatusAt(r, now), HeartbeatAgeS: now.Sub(r.LastHeartbeatAt).Seconds()}
}

// ListProcesses returns every instance that ever reported, newest-started first,
// each with its computed status: the whole history at once, for a caller
// that needs all of it (the metrics); list_processes pages it (Page).
func (s *Service) ListProcesses(ctx context.Context) ([]cks.Process, error) {
	rows, err := s.ListAgentLiveness(ctx)
	if err != nil {
		return nil, err
	}
	now := s.clock.Now()
	out := make([]cks.Process, 0, len(rows))
	for _, r := range rows {
		out = append(out, s.annotate(r, now))
	}
	return out, nil
}

// ProcessStatus returns the most recently started instance of kind with its
// status. A kind that never reported yields Status NotFound, not an error;
// a text that cannot be a kind (cks.ValidateProcessKind) is a FieldError
// naming process_kind.
func (s *Service) ProcessStatus(ctx context.Context, kind string) (cks.Process, error) {
	if err := cks.ValidateProcessKind("process_kind", kind); err != nil {
		return cks.Process{}, err
	}
	r, err := s.LatestAgentLiveness(ctx, kind)
	if errors.Is(err, cks.ErrNotFound) {
		return cks.Process{AgentLiveness: cks.AgentLiveness{ProcessKind: kind}, Status: cks.ProcessNotFound}, nil
	}
	if err != nil {
		return cks.Process{}, err
	}
	return s.annotate(r, s.clock.Now()), nil
}

// ResolveProcess names the instance a stop request for target would go to:
// the newest instance of the kind target when that kind ever reported,
// else the instance whose id is target. A kind goes first, so that no
// instance id a reporter chose can stand for a kind's processes. With
// neither, the Process of kind target is returned with Status NotFound.
func (s *Service) ResolveProcess(ctx context.Context, target string) (cks.Process, error) {
	p, err := s.ProcessStatus(ctx, target)
	if err != nil || p.Status != cks.ProcessNotFound {
		return p, err
	}
	r, err := s.GetAgentLiveness(ctx, target)
	if errors.Is(err, cks.ErrNotFound) {
		return p, nil
	}
	if err != nil {
		return cks.Process{}, err
	}
	return s.annotate(r, s.clock.Now()), nil
}

// RequestStop asks a process to stop: the newest instance of a kind, or one
// instance by id (see ResolveProcess). Only an alive instance is asked (the
// request is stored as its desired_state and published on
// cks.TopicAgentStop); otherwise the result says Found false. The process
// drains — finishes its current task, claims nothing more — and exits; there
// is no start (ADR-016 §4).
func (s *Service) RequestStop(ctx context.Context, target string) (cks.ProcessStopResult, error) {
	p, err := s.ResolveProcess(ctx, target)
	if err != nil {
		return cks.ProcessStopResult{}, err
	}
	res := cks.ProcessStopResult{InstanceID: p.InstanceID, ProcessKind: p.ProcessKind}
	if p.Status != cks.ProcessAlive {
		return res, nil
	}
	res.Found, err = s.RequestAgentStop(ctx, p.InstanceID)
	return res, err
}

// fingerprint summarises what a viewer of the processes would see change.
func fingerprint(ps []cks.Process) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "%s|%s|%d|%d|%s|%s|", p.InstanceID, p.Status, p.LastHeartbeatAt.UnixMicro(), p.ExitedAt.UnixMicro(),
			p.CurrentTaskType, p.DesiredState)
		if p.CurrentTaskID != nil {
			fmt.Fprint(&b, *p.CurrentTaskID)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// Watch reads the live processes (Page's default view: the panel's
// cards; the history behind them is paged on demand) every interval of the service's clock until ctx
// ends and calls changed after the first read and whenever a row or a
// computed status differs from the previous read. Status
// flips caused only by time passing are caught too, which a row-change trigger
// would miss. Read errors are passed to onErr (may be nil) and retried.
func (s *Service) Watch(ctx context.Context, every time.Duration, changed func(), onErr func(error)) {
	t := s.clock.NewTicker(every)
	defer t.Stop()
	last, first := "", true
	for {
		list, err := s.Page(ctx, cks.ListProcessesInput{Limit: cks.MaxListLimit})
		ps := list.Processes
		switch {
		case err != nil && ctx.Err() == nil && onErr != nil:
			onErr(err)
		case err == nil:
			if fp := fingerprint(ps); first || fp != last {
				last, first = fp, false
				changed()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}
