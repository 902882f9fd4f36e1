package sweeper

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cks-dev/cks"
)

// EnvNames returns the names of the environment variables that configure the
// sweeper id: CKS_<ID>_SWEEPER_ENABLED and CKS_<ID>_SWEEPER_INTERVAL.
func EnvNames(id string) (enabled, interval string) {
	return envName(id, "ENABLED"), envName(id, "INTERVAL")
}

func envName(id, what string) string {
	return "CKS_" + strings.ToUpper(id) + "_SWEEPER_" + what
}

// FromEnv reads the settings of the sweeper id through getenv (nil means
// os.Getenv). CKS_<ID>_SWEEPER_ENABLED takes true/false, 1/0, yes/no or on/off;
// CKS_<ID>_SWEEPER_INTERVAL takes a Go duration such as "30s" or "5m", or a
// plain number of seconds, and must be positive. An unset or blank variable
// yields the default; a bad value is an error matching ErrBadSetting that names
// the variable and what was expected.
func FromEnv(id string, defaultEnabled bool, defaultInterval time.Duration, getenv func(string) string) (enabled bool, interval time.Duration, err error) {
	if err := validID(id); err != nil {
		return false, 0, fmt.Errorf("sweeper settings: %w", err)
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	enabledVar, intervalVar := EnvNames(id)
	enabled, interval = defaultEnabled, defaultInterval
	if v := strings.TrimSpace(getenv(enabledVar)); v != "" {
		b, ok := parseBool(v)
		if !ok {
			return false, 0, fmt.Errorf("%w: %s=%q: expected true or false (also 1/0, yes/no, on/off)", ErrBadSetting, enabledVar, v)
		}
		enabled = b
	}
	if v := strings.TrimSpace(getenv(intervalVar)); v != "" {
		d, ok := parseInterval(v)
		if !ok {
			return false, 0, fmt.Errorf("%w: %s=%q: expected a positive duration such as \"30s\" or \"5m\", or a positive number of seconds", ErrBadSetting, intervalVar, v)
		}
		interval = d
	}
	return enabled, interval, nil
}

func parseBool(v string) (value, ok bool) {
	switch strings.ToLower(v) {
	case "1", "t", "true", "y", "yes", "on":
		return true, true
	case "0", "f", "false", "n", "no", "off":
		return false, true
	}
	return false, false
}

// parseInterval reads a positive interval as every duration of cks is read
// (cks.ParseDuration: seconds or a Go duration).
func parseInterval(v string) (time.Duration, bool) {
	d, err := cks.ParseDuration(v)
	return d, err == nil && d > 0
}

// validID accepts lower-case letters, digits and underscores, so that every id
// maps to its own environment variable names.
func validID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: empty", ErrInvalidID)
	}
	for _, c := range id {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return fmt.Errorf("%w: %q: expected lower-case letters, digits and underscores", ErrInvalidID, id)
		}
	}
	return nil
}
