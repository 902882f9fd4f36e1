package cks

import (
	"encoding/hex"
	"fmt"
	"strings"
)

// TraceparentExpected is what a traceparent field must hold, as its
// FieldError says.
const TraceparentExpected = "a W3C traceparent: 00-<32 hex digits of a trace id, not all zero>-<16 hex digits of a span id, not all zero>-<2 hex digits of flags>, such as 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// Traceparent is a parsed W3C Trace Context traceparent (version 00): the
// trace a task was created in, the span it is a child of, and the trace
// flags (01: sampled).
type Traceparent struct {
	TraceID [16]byte
	SpanID  [8]byte
	Flags   byte
}

// ParseTraceparent parses s as a W3C traceparent of version 00, lower-case
// hex as the recommendation writes it (NewTask.Traceparent), or returns a
// FieldError naming field.
func ParseTraceparent(field, s string) (Traceparent, error) {
	var tp Traceparent
	bad := func() (Traceparent, error) {
		return Traceparent{}, fieldError(field, fmt.Sprintf("%s, got %q", TraceparentExpected, truncate(s, 80)))
	}
	parts := strings.Split(s, "-")
	if len(parts) != 4 || parts[0] != "00" || len(parts[1]) != 32 || len(parts[2]) != 16 || len(parts[3]) != 2 {
		return bad()
	}
	for _, p := range parts[1:] {
		if strings.ToLower(p) != p {
			return bad()
		}
	}
	var flags [1]byte
	if _, err := hex.Decode(tp.TraceID[:], []byte(parts[1])); err != nil {
		return bad()
	}
	if _, err := hex.Decode(tp.SpanID[:], []byte(parts[2])); err != nil {
		return bad()
	}
	if _, err := hex.Decode(flags[:], []byte(parts[3])); err != nil {
		return bad()
	}
	if tp.TraceID == [16]byte{} || tp.SpanID == [8]byte{} {
		return bad()
	}
	tp.Flags = flags[0]
	return tp, nil
}

// String is tp as a traceparent header value.
func (tp Traceparent) String() string {
	return "00-" + hex.EncodeToString(tp.TraceID[:]) + "-" + hex.EncodeToString(tp.SpanID[:]) + "-" + hex.EncodeToString([]byte{tp.Flags})
}

// Sampled reports whether tp's sampled flag is set.
func (tp Traceparent) Sampled() bool { return tp.Flags&1 == 1 }

// truncate is s cut to at most n bytes (a refusal quotes no unbounded input).
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
