package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cks-dev/cks"
)

// The variables of Hub's own knobs (its sweepers', ledger's and
// pipeline's are theirs).
const (
	EnvStaleStopThreshold = "CKS_STALE_STOP_THRESHOLD"
	EnvRetention          = "CKS_RETENTION"
	EnvRetentionTasks     = "CKS_RETENTION_TASKS"
	EnvRetentionKnowledge = "CKS_RETENTION_KNOWLEDGE"
	EnvRetentionArchive   = "CKS_RETENTION_ARCHIVE"
	EnvLeaderTTL          = "CKS_LEADER_TTL"
)

// Defaults of Hub.
const (
	// DefaultStaleStopThreshold is how long a task may stay STOPPED before
	// the stale_stop_report sweeper reports it.
	DefaultStaleStopThreshold = 24 * time.Hour
	// DefaultRetention is the age past which operational history (the
	// liveness rows of instances that stopped, the sweepers' passes) is
	// pruned.
	DefaultRetention = 7 * 24 * time.Hour
	// DefaultLeaderTTL is how long a leadership holds without renewal: a
	// killed leader's maintenance resumes on another hub within it plus
	// one renewal interval (a third of it).
	DefaultLeaderTTL = 15 * time.Second
	// DefaultArchive is the task archive's path under the data directory.
	DefaultArchive = "archive/tasks.jsonl"
)

// Hub are a hub's settings but its HTTP server's (HTTP): its sweepers',
// the ledger's, retention's, the leadership's and the pipeline's.
type Hub struct {
	// Sweepers by id: CKS_<ID>_SWEEPER_ENABLED and CKS_<ID>_SWEEPER_INTERVAL.
	Sweepers map[string]Sweeper
	// Ledger are the ledger's settings: the default lease
	// (CKS_STALE_WINDOW, default 5m), also the lease of a pipeline object
	// claim, and the retry backoff (CKS_RETRY_BACKOFF, default 1s); the
	// agents read the same variables (ParseLedger).
	Ledger Ledger
	// StaleStopThreshold is when a STOPPED task is reported
	// (CKS_STALE_STOP_THRESHOLD, default DefaultStaleStopThreshold).
	StaleStopThreshold time.Duration
	// Pipeline is where the research pipeline runs (CKS_PIPELINE_*); a hub
	// runs it in-process when Pipeline.InProcess is set.
	Pipeline Pipeline
	// Retention is the age of the operational history the retention
	// sweeper prunes (CKS_RETENTION, default DefaultRetention; 0 keeps
	// it), RetentionTasks that of the terminal tasks it archives and
	// deletes (CKS_RETENTION_TASKS, default 0: every task kept),
	// RetentionKnowledge that of the transition-log rows of final
	// knowledge objects (CKS_RETENTION_KNOWLEDGE, default 0: kept).
	Retention, RetentionTasks, RetentionKnowledge time.Duration
	// RetentionArchive is the file the tasks are archived to before they
	// are deleted (CKS_RETENTION_ARCHIVE; a hub's default is
	// DefaultArchive under the data directory); the knowledge log goes to
	// knowledge.jsonl in the same directory.
	RetentionArchive string
	// LeaderTTL is the lease of the maintenance leadership (CKS_LEADER_TTL,
	// default DefaultLeaderTTL): when the leader hub is killed, another
	// hub's sweepers take over within it plus a third of it.
	LeaderTTL time.Duration
	// Tracing is whether and where the hub exports OpenTelemetry traces
	// (OTEL_*; off by default).
	Tracing Tracing
}

// DefaultHub are the settings of an empty environment.
func DefaultHub() Hub {
	s, err := ParseHub(nil)
	if err != nil {
		panic(err) // the defaults are valid: TestDefaults
	}
	return s
}

// ParseHub reads Hub with getenv (nil: an empty environment); a bad value
// is an error naming the variable and what was expected.
func ParseHub(getenv Getenv) (Hub, error) {
	getenv = orEmpty(getenv)
	s := Hub{Sweepers: map[string]Sweeper{}}
	for id, def := range DefaultSweepers() {
		set, err := parseSweeper(id, def, getenv)
		if err != nil {
			return s, err
		}
		s.Sweepers[id] = set
	}
	var err error
	// The agents read the same variables (and derive their heartbeat from
	// the default lease).
	if s.Ledger, err = ParseLedger(getenv); err != nil {
		return s, err
	}
	if s.StaleStopThreshold, err = durationSetting(getenv, EnvStaleStopThreshold, DefaultStaleStopThreshold); err != nil {
		return s, err
	}
	if s.Retention, err = retentionSetting(getenv, EnvRetention, DefaultRetention); err != nil {
		return s, err
	}
	if s.RetentionTasks, err = retentionSetting(getenv, EnvRetentionTasks, 0); err != nil {
		return s, err
	}
	if s.RetentionKnowledge, err = retentionSetting(getenv, EnvRetentionKnowledge, 0); err != nil {
		return s, err
	}
	s.RetentionArchive = strings.TrimSpace(getenv(EnvRetentionArchive))
	if s.LeaderTTL, err = durationSetting(getenv, EnvLeaderTTL, DefaultLeaderTTL); err != nil {
		return s, err
	}
	if s.Pipeline, err = ParsePipeline(getenv); err != nil {
		return s, err
	}
	if s.Tracing, err = ParseTracing(getenv); err != nil {
		return s, err
	}
	return s, nil
}

// retentionSetting reads an age of the retention sweeper: a Go duration
// (168h), a number of days (7d), or 0 or off, which keep what it would
// prune (0 is returned).
func retentionSetting(getenv Getenv, name string, def time.Duration) (time.Duration, error) {
	v := strings.TrimSpace(getenv(name))
	switch strings.ToLower(v) {
	case "":
		return def, nil
	case "0", "off":
		return 0, nil
	}
	if days, ok := strings.CutSuffix(v, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n > 0 && n < 100_000 {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	} else if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return d, nil
	}
	return 0, fmt.Errorf("%s=%q: expected an age such as 7d or 168h, or 0 (off) to keep everything", name, v)
}

// durationSetting reads a positive duration, seconds or a Go duration
// (cks.ParseDuration); def when unset.
func durationSetting(getenv Getenv, name string, def time.Duration) (time.Duration, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	d, err := cks.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q: expected a positive duration such as 5m or 24h, or a number of seconds", name, v)
	}
	return d, nil
}

// ageOrOff is an age of the retention sweeper, "off" for 0.
func ageOrOff(d time.Duration) string {
	if d == 0 {
		return "off"
	}
	return d.String()
}

// hubSettings are the hub's own knobs (its HTTP server's in
// httpSettings).
func hubSettings() []Setting {
	hubs := hubReaders()
	return []Setting{
		{Env: EnvStaleStopThreshold, Readers: hubs, Doc: "when a STOPPED task is reported by the stale stop sweeper",
			Value: func(v *Values) string { return dur(v.Hub.StaleStopThreshold) }},
		{Env: EnvRetention, Readers: hubs,
			Doc: "the age past which the retention sweeper prunes operational history (liveness rows of stopped " +
				"instances, recorded sweeper passes): 7d, 168h, or 0/off to keep it",
			Value: func(v *Values) string { return ageOrOff(v.Hub.Retention) }},
		{Env: EnvRetentionTasks, Readers: hubs,
			Doc: "the age past which the retention sweeper archives (CKS_RETENTION_ARCHIVE) and then deletes terminal " +
				"tasks with their events; 0/off keeps every task (audit data)",
			Value: func(v *Values) string { return ageOrOff(v.Hub.RetentionTasks) }},
		{Env: EnvRetentionKnowledge, Readers: hubs,
			Doc: "the age past which the retention sweeper archives (knowledge.jsonl beside CKS_RETENTION_ARCHIVE) and then " +
				"deletes the transition-log entries of knowledge objects in a final status (resolved, needs_input); the objects, " +
				"versions and edges stay; 0/off keeps the whole log (audit data)",
			Value: func(v *Values) string { return ageOrOff(v.Hub.RetentionKnowledge) }},
		{Env: EnvRetentionArchive, Readers: hubs,
			Doc: "the file (JSON lines, one task with its events, evidence and aborts a line) the retention sweeper " +
				"appends old tasks to before it deletes them",
			Default: "DIR/" + DefaultArchive + " of the data directory DIR"},
		{Env: EnvLeaderTTL, Readers: hubs,
			Doc:   "the lease of the maintenance leadership: a killed leader is replaced within it plus a third of it",
			Value: func(v *Values) string { return dur(v.Hub.LeaderTTL) }},
	}
}
