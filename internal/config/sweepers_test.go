package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestParseSweeper: a sweeper's switch takes true/false, 1/0, yes/no,
// on/off; its interval seconds or a Go duration, positive; a bad value
// names its variable.
func TestParseSweeper(t *testing.T) {
	const (
		enabledVar  = "CKS_LEASE_REAPER_SWEEPER_ENABLED"
		intervalVar = "CKS_LEASE_REAPER_SWEEPER_INTERVAL"
	)
	cases := []struct {
		name         string
		env          map[string]string
		wantEnabled  bool
		wantInterval time.Duration
		wantErr      []string // substrings of the error; nil for no error
	}{
		{name: "unset: defaults", wantEnabled: true, wantInterval: time.Minute},
		{name: "blank: defaults", env: map[string]string{enabledVar: " ", intervalVar: ""}, wantEnabled: true, wantInterval: time.Minute},
		{name: "false", env: map[string]string{enabledVar: "false"}, wantEnabled: false, wantInterval: time.Minute},
		{name: "0", env: map[string]string{enabledVar: "0"}, wantEnabled: false, wantInterval: time.Minute},
		{name: "Off", env: map[string]string{enabledVar: "Off"}, wantEnabled: false, wantInterval: time.Minute},
		{name: "TRUE", env: map[string]string{enabledVar: "TRUE"}, wantEnabled: true, wantInterval: time.Minute},
		{name: "yes", env: map[string]string{enabledVar: " yes "}, wantEnabled: true, wantInterval: time.Minute},
		{name: "Go duration", env: map[string]string{intervalVar: "30s"}, wantEnabled: true, wantInterval: 30 * time.Second},
		{name: "compound duration", env: map[string]string{intervalVar: "1h30m"}, wantEnabled: true, wantInterval: 90 * time.Minute},
		{name: "plain seconds", env: map[string]string{intervalVar: "45"}, wantEnabled: true, wantInterval: 45 * time.Second},
		{name: "fractional seconds", env: map[string]string{intervalVar: "1.5"}, wantEnabled: true, wantInterval: 1500 * time.Millisecond},
		{name: "bad enabled", env: map[string]string{enabledVar: "maybe"}, wantErr: []string{enabledVar, `"maybe"`, "expected true or false"}},
		{name: "bad interval", env: map[string]string{intervalVar: "soon"}, wantErr: []string{intervalVar, `"soon"`, "expected a positive duration"}},
		{name: "zero interval", env: map[string]string{intervalVar: "0"}, wantErr: []string{intervalVar, "positive"}},
		{name: "zero duration", env: map[string]string{intervalVar: "0s"}, wantErr: []string{intervalVar, "positive"}},
		{name: "negative interval", env: map[string]string{intervalVar: "-5s"}, wantErr: []string{intervalVar, "positive"}},
		{name: "negative seconds", env: map[string]string{intervalVar: "-5"}, wantErr: []string{intervalVar}},
		{name: "huge seconds", env: map[string]string{intervalVar: "1e300"}, wantErr: []string{intervalVar}},
		{name: "NaN", env: map[string]string{intervalVar: "NaN"}, wantErr: []string{intervalVar}},
		{name: "under a nanosecond", env: map[string]string{intervalVar: "1e-12"}, wantErr: []string{intervalVar}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			getenv := func(k string) string { return c.env[k] }
			got, err := parseSweeper("lease_reaper", Sweeper{true, time.Minute}, getenv)
			enabled, interval := got.Enabled, got.Interval
			if c.wantErr != nil {
				if err == nil {
					t.Fatalf("parseSweeper = %v, %v, nil; want an error", enabled, interval)
				}
				if !errors.Is(err, ErrBadSweeperSetting) {
					t.Errorf("err = %v, want ErrBadSweeperSetting", err)
				}
				for _, s := range c.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("err = %q, want it to mention %q", err, s)
					}
				}
				return
			}
			if err != nil || enabled != c.wantEnabled || interval != c.wantInterval {
				t.Fatalf("parseSweeper = %v, %v, %v; want %v, %v, nil", enabled, interval, err, c.wantEnabled, c.wantInterval)
			}
		})
	}
}

func TestParseSweeperDefaultsOff(t *testing.T) {
	got, err := parseSweeper("graph_health", Sweeper{false, 5 * time.Minute}, func(string) string { return "" })
	if err != nil || got.Enabled || got.Interval != 5*time.Minute {
		t.Fatalf("parseSweeper = %+v, %v; want false, 5m, nil", got, err)
	}
	if e, i := SweeperEnv("inference_staleness"); e != "CKS_INFERENCE_STALENESS_SWEEPER_ENABLED" || i != "CKS_INFERENCE_STALENESS_SWEEPER_INTERVAL" {
		t.Fatalf("SweeperEnv = %q, %q", e, i)
	}
}
