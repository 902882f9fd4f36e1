package config_test

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/config"
)

func TestSettingsFromEnv(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	for _, tc := range []struct {
		kind    string
		vars    map[string]string
		check   func(config.Agent) bool
		wantErr string // the variable the error must name
	}{
		{"critic", nil, func(s config.Agent) bool {
			return s.PollInterval == 5*time.Second && s.HeartbeatInterval == time.Minute &&
				s.LivenessInterval == 30*time.Second && s.MaxRetries == -1 && s.StaleWindow == config.DefaultLease &&
				s.Lease == 3*time.Minute && s.DrainTimeout == config.DefaultDrainTimeout
		}, ""},
		{"fork_resolution", nil, func(s config.Agent) bool { return s.PollInterval == 30*time.Second }, ""},
		{"fork_resolution", map[string]string{"CKS_FORK_AGENT_LIVENESS_INTERVAL": "2.5"},
			func(s config.Agent) bool { return s.LivenessInterval == 2500*time.Millisecond }, ""},
		{"pipeline", map[string]string{"CKS_PIPELINE_POLL_INTERVAL": "250ms", "CKS_PIPELINE_MAX_RETRIES": "0"},
			func(s config.Agent) bool { return s.PollInterval == 250*time.Millisecond && s.MaxRetries == 0 }, ""},
		{"enrichment", map[string]string{"CKS_ENRICHMENT_HEARTBEAT_INTERVAL": "300"},
			func(s config.Agent) bool { return s.Lease == 15*time.Minute }, ""},
		{"exec", map[string]string{"CKS_EXEC_TYPES": "build, test,build"},
			func(s config.Agent) bool { return strings.Join(s.Types, "|") == "build|test" }, ""},
		{"exec", map[string]string{"CKS_STALE_WINDOW": "15s", "CKS_EXEC_HEARTBEAT_INTERVAL": "5"},
			func(s config.Agent) bool { return s.StaleWindow == 15*time.Second && s.Lease == 15*time.Second }, ""},
		// Seconds, as every other duration (issue 39): the hub reads it alike.
		{"exec", map[string]string{"CKS_STALE_WINDOW": "30"},
			func(s config.Agent) bool { return s.StaleWindow == 30*time.Second && s.Lease == 30*time.Second }, ""},
		{"exec", map[string]string{"CKS_STALE_WINDOW": "-1m"}, nil, "CKS_STALE_WINDOW"},
		{"exec", map[string]string{"CKS_STALE_WINDOW": "0.5"}, nil, "CKS_STALE_WINDOW"}, // below the ledger's least lease
		{"exec", map[string]string{"CKS_RETRY_BACKOFF": "2h"}, nil, "CKS_RETRY_BACKOFF"},
		{"exec", map[string]string{"CKS_EXEC_DRAIN_TIMEOUT": "0"}, func(s config.Agent) bool { return s.DrainTimeout == 0 }, ""},
		{"exec", map[string]string{"CKS_EXEC_DRAIN_TIMEOUT": "2.5"},
			func(s config.Agent) bool { return s.DrainTimeout == 2500*time.Millisecond }, ""},
		{"exec", map[string]string{"CKS_EXEC_DRAIN_TIMEOUT": "soon"}, nil, "CKS_EXEC_DRAIN_TIMEOUT"},
		{"exec", nil, func(s config.Agent) bool { return s.Concurrency == 1 }, ""},
		{"exec", map[string]string{"CKS_EXEC_CONCURRENCY": "8"}, func(s config.Agent) bool { return s.Concurrency == 8 }, ""},
		{"exec", map[string]string{"CKS_EXEC_CONCURRENCY": "0"}, nil, "CKS_EXEC_CONCURRENCY"},
		{"exec", map[string]string{"CKS_EXEC_CONCURRENCY": "257"}, nil, "CKS_EXEC_CONCURRENCY"},
		{"critic", map[string]string{"CKS_CRITIC_CONCURRENCY": "two"}, nil, "CKS_CRITIC_CONCURRENCY"},
		{"critic", map[string]string{"CKS_CRITIC_LIVENESS_INTERVAL": "soon"}, nil, "CKS_CRITIC_LIVENESS_INTERVAL"},
		{"critic", map[string]string{"CKS_CRITIC_POLL_INTERVAL": "-1"}, nil, "CKS_CRITIC_POLL_INTERVAL"},
		{"fork_resolution", map[string]string{"CKS_FORK_AGENT_MAX_RETRIES": "many"}, nil, "CKS_FORK_AGENT_MAX_RETRIES"},
		{"critics", nil, nil, "critic, enrichment"},
	} {
		s, err := config.ParseAgent(tc.kind, env(tc.vars))
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s %v: err %v, want one naming %s", tc.kind, tc.vars, err, tc.wantErr)
		case tc.wantErr == "" && (err != nil || !tc.check(s)):
			t.Errorf("%s %v: %+v, %v", tc.kind, tc.vars, s, err)
		}
	}
}

func TestFlagsOverrideEnv(t *testing.T) {
	s, err := config.ParseAgent("critic", func(k string) string {
		return map[string]string{"CKS_CRITIC_POLL_INTERVAL": "9", "CKS_CRITIC_TYPES": "critique"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	s.RegisterFlags(fs)
	if err := fs.Parse([]string{"--poll-interval", "1s", "--heartbeat-interval", "20", "--types", "a,b", "--concurrency", "4"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(); err != nil {
		t.Fatal(err)
	}
	if s.PollInterval != time.Second || s.HeartbeatInterval != 20*time.Second || strings.Join(s.Types, ",") != "a,b" ||
		s.Lease != time.Minute || s.Concurrency != 4 {
		t.Fatalf("settings %+v", s)
	}
	for _, bad := range [][]string{{"--liveness-interval", "never"}, {"--concurrency", "0"}, {"--concurrency", "1000"}} {
		if err := fs.Parse(bad); err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(bad[0], "--")) {
			t.Fatalf("bad flag %q: %v", bad, err)
		}
	}
}

// TestAgentLease: an agent's lease is three of its heartbeats, renewed
// every third of it, whatever the default lease (CKS_STALE_WINDOW) is —
// the ledger holds every claim to the lease it asked for (issue 37), so a
// heartbeat longer than a third of the default lease is no longer refused;
// a heartbeat not set is 60 s or a third of the default lease, if shorter.
func TestAgentLease(t *testing.T) {
	for _, tc := range []struct {
		vars  map[string]string
		flags []string
		lease time.Duration
	}{
		{vars: nil, lease: 3 * time.Minute}, // the seeds' 60 s heartbeat
		{vars: map[string]string{"CKS_STALE_WINDOW": "15s", "CKS_EXEC_HEARTBEAT_INTERVAL": "5"}, lease: 15 * time.Second},
		{vars: map[string]string{"CKS_STALE_WINDOW": "15s"}, lease: 15 * time.Second}, // the default heartbeat follows: 5 s
		{vars: map[string]string{"CKS_STALE_WINDOW": "1h"}, lease: 3 * time.Minute},   // ... but never beyond 60 s
		{vars: map[string]string{"CKS_STALE_WINDOW": "15s", "CKS_EXEC_HEARTBEAT_INTERVAL": "6"}, lease: 18 * time.Second},
		{vars: map[string]string{"CKS_STALE_WINDOW": "15s"}, flags: []string{"--heartbeat-interval", "5s"}, lease: 15 * time.Second},
		{vars: map[string]string{"CKS_STALE_WINDOW": "15s", "CKS_EXEC_HEARTBEAT_INTERVAL": "5"}, flags: []string{"--heartbeat-interval", "10s"},
			lease: 30 * time.Second},
		{vars: map[string]string{"CKS_EXEC_HEARTBEAT_INTERVAL": "101"}, lease: 303 * time.Second},
	} {
		s, err := config.ParseAgent("exec", func(k string) string { return tc.vars[k] })
		if err != nil {
			t.Fatalf("%v: %v", tc.vars, err)
		}
		fs := flag.NewFlagSet("agent", flag.ContinueOnError)
		s.RegisterFlags(fs)
		if err := fs.Parse(tc.flags); err != nil {
			t.Fatal(err)
		}
		if err := s.Finish(); err != nil || s.Lease != tc.lease || s.Lease != 3*s.HeartbeatInterval {
			t.Errorf("%v %v: lease %s (heartbeat %s), %v; want %s, three heartbeats", tc.vars, tc.flags, s.Lease, s.HeartbeatInterval, err, tc.lease)
		}
	}
	// A heartbeat whose lease (three of them) is under the ledger's bound.
	s, _ := config.ParseAgent("exec", func(string) string { return "" })
	s.HeartbeatInterval = 100 * time.Millisecond
	if err := s.Finish(); err == nil || !strings.Contains(err.Error(), "CKS_EXEC_HEARTBEAT_INTERVAL") || !strings.Contains(err.Error(), "1s") {
		t.Errorf("a 100ms heartbeat: err %v, want one naming the heartbeat and the ledger's 1s", err)
	}
}
