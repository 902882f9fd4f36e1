package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/config"
)

// TestRetentionSettings: CKS_RETENTION, CKS_RETENTION_TASKS and
// CKS_RETENTION_KNOWLEDGE take days, Go durations, or 0/off; the defaults
// keep tasks and the knowledge log and prune liveness rows
// after 7 days; a bad value names its variable.
func TestRetentionSettings(t *testing.T) {
	for _, c := range []struct {
		env                   map[string]string
		age, tasks, knowledge time.Duration
		errContains           string
	}{
		{env: nil, age: config.DefaultRetention},
		{env: map[string]string{"CKS_RETENTION": "30d", "CKS_RETENTION_TASKS": "90d"}, age: 30 * 24 * time.Hour, tasks: 90 * 24 * time.Hour},
		{env: map[string]string{"CKS_RETENTION": "off", "CKS_RETENTION_TASKS": "36h"}, tasks: 36 * time.Hour},
		{env: map[string]string{"CKS_RETENTION": "0"}},
		{env: map[string]string{"CKS_RETENTION_KNOWLEDGE": "365d"}, age: config.DefaultRetention, knowledge: 365 * 24 * time.Hour},
		{env: map[string]string{"CKS_RETENTION_KNOWLEDGE": "off"}, age: config.DefaultRetention},
		{env: map[string]string{"CKS_RETENTION_KNOWLEDGE": "soon"}, errContains: "CKS_RETENTION_KNOWLEDGE="},
		{env: map[string]string{"CKS_RETENTION": "a week"}, errContains: "CKS_RETENTION="},
		{env: map[string]string{"CKS_RETENTION_TASKS": "-1d"}, errContains: "CKS_RETENTION_TASKS="},
	} {
		s, err := config.ParseHub(func(k string) string { return c.env[k] })
		switch {
		case c.errContains != "":
			if err == nil || !strings.Contains(err.Error(), c.errContains) {
				t.Errorf("%v: %v, want an error naming %s", c.env, err, c.errContains)
			}
		case err != nil || s.Retention != c.age || s.RetentionTasks != c.tasks || s.RetentionKnowledge != c.knowledge:
			t.Errorf("%v: %v %v %v, %v; want %v %v %v", c.env, s.Retention, s.RetentionTasks, s.RetentionKnowledge, err, c.age, c.tasks, c.knowledge)
		}
	}
}

// TestDurationSettingsOneParser (issue 39): the hub reads its durations
// as every agent interval is read — seconds or a Go duration — so
// CKS_STALE_WINDOW=30 is 30 s, not a refusal; a bad one names its variable.
func TestDurationSettingsOneParser(t *testing.T) {
	for _, c := range []struct {
		env         map[string]string
		check       func(config.Hub) bool
		errContains string
	}{
		{env: nil, check: func(s config.Hub) bool {
			return s.Ledger.DefaultLease == config.DefaultLease && s.Ledger.RetryBackoff == config.BackoffBase
		}},
		{env: map[string]string{"CKS_STALE_WINDOW": "30"}, check: func(s config.Hub) bool { return s.Ledger.DefaultLease == 30*time.Second }},
		{env: map[string]string{"CKS_STALE_WINDOW": "1m30s"}, check: func(s config.Hub) bool { return s.Ledger.DefaultLease == 90*time.Second }},
		{env: map[string]string{"CKS_RETRY_BACKOFF": "0"}, check: func(s config.Hub) bool { return s.Ledger.RetryBackoff == 0 }},
		{env: map[string]string{"CKS_RETRY_BACKOFF": "2.5"}, check: func(s config.Hub) bool { return s.Ledger.RetryBackoff == 2500*time.Millisecond }},
		{env: map[string]string{"CKS_LEADER_TTL": "12"}, check: func(s config.Hub) bool { return s.LeaderTTL == 12*time.Second }},
		{env: map[string]string{"CKS_STALE_STOP_THRESHOLD": "3600"}, check: func(s config.Hub) bool { return s.StaleStopThreshold == time.Hour }},
		{env: map[string]string{"CKS_LEASE_REAPER_SWEEPER_INTERVAL": "10"},
			check: func(s config.Hub) bool { return s.Sweepers["lease_reaper"].Interval == 10*time.Second }},
		{env: map[string]string{"CKS_STALE_WINDOW": "soon"}, errContains: "CKS_STALE_WINDOW"},
		{env: map[string]string{"CKS_STALE_WINDOW": "0"}, errContains: "CKS_STALE_WINDOW"},
		{env: map[string]string{"CKS_RETRY_BACKOFF": "2h"}, errContains: "CKS_RETRY_BACKOFF"},
		{env: map[string]string{"CKS_LEADER_TTL": "-5"}, errContains: "CKS_LEADER_TTL"},
	} {
		s, err := config.ParseHub(func(k string) string { return c.env[k] })
		switch {
		case c.errContains != "":
			if err == nil || !strings.Contains(err.Error(), c.errContains) {
				t.Errorf("%v: %v, want an error naming %s", c.env, err, c.errContains)
			}
		case err != nil || !c.check(s):
			t.Errorf("%v: %+v, %v", c.env, s, err)
		}
	}
}

// TestTracingSettings: tracing is off unless OTEL_TRACES_EXPORTER=otlp or
// an OTLP endpoint is set; none and OTEL_SDK_DISABLED turn it off; the
// endpoint resolves as the OpenTelemetry specification says; a protocol
// other than http/protobuf, an unknown exporter and a bad URL are refused
// naming their variable.
func TestTracingSettings(t *testing.T) {
	for _, c := range []struct {
		env         map[string]string
		on          bool
		endpoint    string
		service     string
		errContains string
	}{
		{env: nil, endpoint: "http://localhost:4318/v1/traces", service: "cks"},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, on: true, endpoint: "http://localhost:4318/v1/traces", service: "cks"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://col:4318/", "OTEL_SERVICE_NAME": "hub-a"}, on: true,
			endpoint: "http://col:4318/v1/traces", service: "hub-a"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://col/x"}, on: true, endpoint: "https://col/x", service: "cks"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://col:4318", "OTEL_TRACES_EXPORTER": "none"},
			endpoint: "http://col:4318/v1/traces", service: "cks"},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"}, endpoint: "http://localhost:4318/v1/traces", service: "cks"},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, errContains: "OTEL_TRACES_EXPORTER="},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, errContains: "OTEL_EXPORTER_OTLP_PROTOCOL="},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "col:4318"}, errContains: "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{env: map[string]string{"OTEL_SDK_DISABLED": "maybe"}, errContains: "OTEL_SDK_DISABLED="},
	} {
		s, err := config.ParseTracing(func(k string) string { return c.env[k] })
		switch {
		case c.errContains != "":
			if err == nil || !strings.Contains(err.Error(), c.errContains) {
				t.Errorf("%v: %v, want an error naming %s", c.env, err, c.errContains)
			}
		case err != nil || s.Enabled != c.on || s.Endpoint != c.endpoint || s.ServiceName != c.service:
			t.Errorf("%v: %+v, %v; want on %v at %s as %s", c.env, s, err, c.on, c.endpoint, c.service)
		}
	}
}
