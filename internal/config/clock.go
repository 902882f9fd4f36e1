package config

import (
	"fmt"
	"time"

	"github.com/cks-dev/cks"
)

// The test-only variables of the clock correction (TestClock): the
// process-level tests of the correction run hubs and agents whose host
// clocks are off.
const (
	// EnvTestClockSkew is a duration ("-30s") the host's clock is moved by:
	// a process playing a host whose clock is wrong.
	EnvTestClockSkew = "CKS_TEST_CLOCK_SKEW"
	// EnvTestClockCorrection "off" leaves the host's clock uncorrected.
	EnvTestClockCorrection = "CKS_TEST_CLOCK_CORRECTION"
)

// TestClock is how a process's host clock is made wrong for a test
// (backend.ClockOptions turns it into the options of backend.Open); its
// zero value is a true, corrected clock.
type TestClock struct {
	// Skew moves the host's clock (CKS_TEST_CLOCK_SKEW).
	Skew time.Duration
	// Uncorrected leaves the host's clock uncorrected by the database's
	// (CKS_TEST_CLOCK_CORRECTION=off).
	Uncorrected bool
}

// ParseTestClock reads TestClock with getenv (nil: an empty environment).
// A bad value is an error naming the variable.
func ParseTestClock(getenv Getenv) (TestClock, error) {
	getenv = orEmpty(getenv)
	var c TestClock
	if v := getenv(EnvTestClockSkew); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return TestClock{}, fmt.Errorf("%s=%q: want a duration such as -30s: %w", EnvTestClockSkew, v, cks.ErrInvalid)
		}
		c.Skew = d
	}
	switch v := getenv(EnvTestClockCorrection); v {
	case "", "on":
	case "off":
		c.Uncorrected = true
	default:
		return TestClock{}, fmt.Errorf("%s=%q: want on or off: %w", EnvTestClockCorrection, v, cks.ErrInvalid)
	}
	return c, nil
}

// testClockSettings are the tests' hooks of the clock correction.
func testClockSettings() []Setting {
	readers := append(append(hubReaders(), "mcp"), agentWords(AgentKinds()...)...)
	return []Setting{
		{Env: EnvTestClockSkew, Readers: readers, Test: true, Doc: "moves the host's clock by this duration (tests only)"},
		{Env: EnvTestClockCorrection, Readers: readers, Test: true, Doc: "off leaves the host's clock uncorrected (tests only)"},
	}
}
