package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cks-dev/cks"
)

// ErrBadSweeperSetting marks a sweeper's variable whose value cannot be
// parsed.
var ErrBadSweeperSetting = errors.New("bad sweeper setting")

// Sweeper is one sweeper's configured enablement and interval:
// CKS_<ID>_SWEEPER_ENABLED and CKS_<ID>_SWEEPER_INTERVAL.
type Sweeper struct {
	Enabled  bool
	Interval time.Duration
}

// DefaultSweepers are each sweeper's default enablement and interval, by
// its id (the ids of package sweeper: a hub refuses to register a sweeper
// that has none here).
func DefaultSweepers() map[string]Sweeper {
	return map[string]Sweeper{
		"lease_reaper":       {true, 30 * time.Second},
		"dependency_release": {true, time.Minute},
		"stale_stop_report":  {true, 5 * time.Minute},
		// The knowledge sweepers (issue 8).
		"fork_detection":      {true, time.Minute},
		"contradiction":       {true, 5 * time.Minute},
		"inference_staleness": {true, 5 * time.Minute},
		"graph_health":        {true, 10 * time.Minute},
		// Issue 26: on by default; with the default ages it prunes only
		// operational history (liveness rows), never a task.
		"retention": {true, 10 * time.Minute},
	}
}

// SweeperEnv returns the names of the variables that configure the
// sweeper id: CKS_<ID>_SWEEPER_ENABLED and CKS_<ID>_SWEEPER_INTERVAL.
func SweeperEnv(id string) (enabled, interval string) {
	return sweeperEnv(id, "ENABLED"), sweeperEnv(id, "INTERVAL")
}

func sweeperEnv(id, what string) string {
	return "CKS_" + strings.ToUpper(id) + "_SWEEPER_" + what
}

// parseSweeper reads the settings of the sweeper id through getenv, def
// where unset. CKS_<ID>_SWEEPER_ENABLED takes true/false, 1/0, yes/no or
// on/off; CKS_<ID>_SWEEPER_INTERVAL takes a Go duration such as "30s" or
// "5m", or a plain number of seconds, and must be positive. An unset or
// blank variable yields the default; a bad value is an error matching
// ErrBadSweeperSetting that names the variable and what was expected.
func parseSweeper(id string, def Sweeper, getenv Getenv) (Sweeper, error) {
	enabledVar, intervalVar := SweeperEnv(id)
	s := def
	if v := strings.TrimSpace(getenv(enabledVar)); v != "" {
		b, ok := parseSwitch(v)
		if !ok {
			return def, fmt.Errorf("%w: %s=%q: expected true or false (also 1/0, yes/no, on/off)", ErrBadSweeperSetting, enabledVar, v)
		}
		s.Enabled = b
	}
	if v := strings.TrimSpace(getenv(intervalVar)); v != "" {
		d, err := cks.ParseDuration(v)
		if err != nil || d <= 0 {
			return def, fmt.Errorf("%w: %s=%q: expected a positive duration such as \"30s\" or \"5m\", or a positive number of seconds", ErrBadSweeperSetting, intervalVar, v)
		}
		s.Interval = d
	}
	return s, nil
}

// parseSwitch reads true/false, 1/0, yes/no or on/off.
func parseSwitch(v string) (value, ok bool) {
	switch strings.ToLower(v) {
	case "1", "t", "true", "y", "yes", "on":
		return true, true
	case "0", "f", "false", "n", "no", "off":
		return false, true
	}
	return false, false
}

// sweeperSettings are each sweeper's enablement and interval.
func sweeperSettings() []Setting {
	var t []Setting
	hubs := hubReaders()
	for _, id := range slices.Sorted(maps.Keys(DefaultSweepers())) {
		en, iv := SweeperEnv(id)
		t = append(t,
			Setting{Env: en, Readers: hubs, Doc: "whether the " + id + " sweeper runs (true/false)",
				Value: func(v *Values) string { return strconv.FormatBool(v.Hub.Sweepers[id].Enabled) }},
			Setting{Env: iv, Readers: hubs, Doc: "the interval of the " + id + " sweeper's passes",
				Value: func(v *Values) string { return dur(v.Hub.Sweepers[id].Interval) }})
	}
	return t
}
