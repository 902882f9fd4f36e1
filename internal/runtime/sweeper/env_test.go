package sweeper

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestFromEnv(t *testing.T) {
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
			enabled, interval, err := FromEnv("lease_reaper", true, time.Minute, getenv)
			if c.wantErr != nil {
				if err == nil {
					t.Fatalf("FromEnv = %v, %v, nil; want an error", enabled, interval)
				}
				if !errors.Is(err, ErrBadSetting) {
					t.Errorf("err = %v, want ErrBadSetting", err)
				}
				for _, s := range c.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("err = %q, want it to mention %q", err, s)
					}
				}
				return
			}
			if err != nil || enabled != c.wantEnabled || interval != c.wantInterval {
				t.Fatalf("FromEnv = %v, %v, %v; want %v, %v, nil", enabled, interval, err, c.wantEnabled, c.wantInterval)
			}
		})
	}
}

func TestFromEnvDefaultsOffAndBadID(t *testing.T) {
	enabled, interval, err := FromEnv("graph_health", false, 5*time.Minute, func(string) string { return "" })
	if err != nil || enabled || interval != 5*time.Minute {
		t.Fatalf("FromEnv = %v, %v, %v; want false, 5m, nil", enabled, interval, err)
	}
	if _, _, err := FromEnv("Graph-Health", true, time.Minute, func(string) string { return "" }); !errors.Is(err, ErrInvalidID) {
		t.Fatalf("FromEnv with a bad id = %v, want ErrInvalidID", err)
	}
	if e, i := EnvNames("inference_staleness"); e != "CKS_INFERENCE_STALENESS_SWEEPER_ENABLED" || i != "CKS_INFERENCE_STALENESS_SWEEPER_INTERVAL" {
		t.Fatalf("EnvNames = %q, %q", e, i)
	}
}
