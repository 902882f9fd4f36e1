package backend_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/config"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// TestDatabaseNow: Postgres answers its own clock (the test's server runs
// on this host, so within a second of the host's, and later than a time
// read before the call); SQLite says it has none of its own.
func TestDatabaseNow(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		s := open(t)
		before := time.Now().Add(-time.Second)
		now, own, err := s.DatabaseNow(backendtest.Ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		wantOwn := s.Dialect() == "postgres"
		if own != wantOwn {
			t.Fatalf("own = %v on %s, want %v", own, s.Dialect(), wantOwn)
		}
		if own && (now.Before(before) || now.After(time.Now().Add(time.Second))) {
			t.Fatalf("the database's clock %v is not this host's (%v)", now, time.Now())
		}
		if !own && !now.IsZero() {
			t.Fatalf("SQLite answered a clock of its own: %v", now)
		}
	})
}

// TestClockCorrection: a backend opened without an injected clock tells
// the time by the database's clock on Postgres, however wrong the host's
// (a skew played by driver.WithHostClockSkew), and stamps a claim's lease
// by it; with the correction off, or on SQLite (one host), the host's
// clock is kept, skew and all; an injected clock is kept as it is.
func TestClockCorrection(t *testing.T) {
	const skew = -30 * time.Second
	fake := clock.NewFake(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		for _, tc := range []struct {
			name string
			opts []driver.Option
			// corrected on Postgres, by an offset of about wantOffset;
			// wantBehind is how far the services' clock is then behind
			// the database's (or this host's, on SQLite).
			corrected  bool
			wantOffset time.Duration
			wantBehind time.Duration
		}{
			{"default", nil, true, 0, 0},
			{"host 30s behind", []driver.Option{driver.WithHostClockSkew(skew)}, true, -skew, 0},
			{"host 30s behind, correction off", []driver.Option{driver.WithHostClockSkew(skew), driver.WithoutClockCorrection()}, false, 0, -skew},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s := open(t, tc.opts...)
				ctx := backendtest.Ctx(t)
				m, ok := s.ClockCorrection()
				pg := s.Dialect() == "postgres"
				if ok != (pg && tc.corrected) {
					t.Fatalf("corrected = %v on %s, want %v", ok, s.Dialect(), pg && tc.corrected)
				}
				ref := time.Now() // SQLite: this host's clock is the database's
				if pg {
					var err error
					if ref, _, err = s.DatabaseNow(ctx); err != nil {
						t.Fatal(err)
					}
				}
				behind := tc.wantBehind
				if !pg && len(tc.opts) > 0 {
					behind = -skew // nothing to correct by
				}
				within(t, "the services' clock", s.Clock().Now(), ref.Add(-behind))
				if ok {
					within(t, "the database's clock less the measured offset", ref.Add(-m.Offset), ref.Add(-tc.wantOffset))
					if m.RTT <= 0 || m.RTT > time.Second {
						t.Errorf("round trip %v", m.RTT)
					}
				}
				// The lease of a claim is stamped by the services' clock.
				if _, _, err := s.Tasks.Enqueue(ctx, cks.NewTask{Type: "clock", Title: "lease"}); err != nil {
					t.Fatal(err)
				}
				claimed, err := s.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "w", Types: []string{"clock"}, N: 1, Lease: time.Minute})
				if err != nil || len(claimed) != 1 {
					t.Fatalf("claim: %v %v", claimed, err)
				}
				within(t, "the lease's renewal", claimed[0].LeaseRenewedAt, ref.Add(-behind))
			})
		}
		t.Run("injected clock", func(t *testing.T) {
			s := open(t, driver.WithClock(fake), driver.WithHostClockSkew(skew))
			if _, ok := s.ClockCorrection(); ok || s.Clock() != fake {
				t.Fatalf("an injected clock was replaced (corrected %v)", ok)
			}
		})
	})
}

// within fails t unless got is within a second of want: the reads of the
// two clocks are a round trip or a claim apart.
func within(t testing.TB, what string, got, want time.Time) {
	t.Helper()
	if d := got.Sub(want); d < -time.Second || d > time.Second {
		t.Errorf("%s reads %v, %v off %v", what, got, d, want)
	}
}

// TestEnvOptions: the test-only variables set the skew and turn the
// correction off (config.ParseTestClock, ClockOptions); a bad value names
// its variable and is invalid.
func TestEnvOptions(t *testing.T) {
	envOptions := func(getenv func(string) string) ([]driver.Option, error) {
		c, err := config.ParseTestClock(getenv)
		return backend.ClockOptions(c), err
	}
	for _, tc := range []struct {
		env     map[string]string
		want    driver.Options
		wantErr string
	}{
		{env: nil},
		{env: map[string]string{config.EnvTestClockSkew: "-30s", config.EnvTestClockCorrection: "off"},
			want: driver.Options{HostClockSkew: -30 * time.Second, NoClockCorrection: true}},
		{env: map[string]string{config.EnvTestClockCorrection: "on"}},
		{env: map[string]string{config.EnvTestClockSkew: "30"}, wantErr: config.EnvTestClockSkew},
		{env: map[string]string{config.EnvTestClockCorrection: "no"}, wantErr: config.EnvTestClockCorrection},
	} {
		opts, err := envOptions(func(k string) string { return tc.env[k] })
		if tc.wantErr != "" {
			if !errors.Is(err, cks.ErrInvalid) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%v: %v, want an invalid %s", tc.env, err, tc.wantErr)
			}
			continue
		}
		var got driver.Options
		for _, f := range opts {
			f(&got)
		}
		if err != nil || got != tc.want {
			t.Errorf("%v: %+v %v, want %+v", tc.env, got, err, tc.want)
		}
	}
}
