package cks_test

import (
	"errors"
	"testing"

	"github.com/cks-dev/cks"
)

// TestParseTraceparent: a W3C traceparent of version 00 parses and prints
// back as given; anything else is a FieldError naming the field.
func TestParseTraceparent(t *testing.T) {
	const ok = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tp, err := cks.ParseTraceparent("traceparent", ok)
	if err != nil || tp.String() != ok || !tp.Sampled() {
		t.Fatalf("ParseTraceparent(%q) = %v (%s), %v", ok, tp, tp.String(), err)
	}
	for _, bad := range []string{"", "00", ok + "-00", "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b-01",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1"} {
		_, err := cks.ParseTraceparent("traceparent", bad)
		var fe *cks.FieldError
		if !errors.As(err, &fe) || fe.Field != "traceparent" {
			t.Errorf("ParseTraceparent(%q) = %v, want a FieldError naming traceparent", bad, err)
		}
	}
}

// FuzzParseTraceparent: whatever ParseTraceparent takes prints back as
// given, and it never panics.
func FuzzParseTraceparent(f *testing.F) {
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")
	f.Add("00--")
	f.Fuzz(func(t *testing.T, s string) {
		tp, err := cks.ParseTraceparent("traceparent", s)
		if err == nil && tp.String() != s {
			t.Fatalf("ParseTraceparent(%q) prints back as %q", s, tp.String())
		}
	})
}
