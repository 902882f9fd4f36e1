package client_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/cks-dev/cks/client"
)

// roundTripper answers every request itself, recording what it was sent.
type roundTripper struct{ got []*http.Request }

func (rt *roundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	rt.got = append(rt.got, r)
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{"status":"ok"}`)), Request: r}, nil
}

// TestNewWithHTTP: a client made with an HTTP client of the caller's sends
// through it (its transport), with the token, to the hub's URL.
func TestNewWithHTTP(t *testing.T) {
	rt := &roundTripper{}
	c := client.NewWithHTTP("http://hub.invalid:7433/", "tok", &http.Client{Transport: rt})
	if err := c.Health(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(rt.got) != 1 {
		t.Fatalf("the transport saw %d requests, want 1", len(rt.got))
	}
	r := rt.got[0]
	if r.URL.String() != "http://hub.invalid:7433/healthz" || r.Header.Get("Authorization") != "Bearer tok" {
		t.Errorf("sent %s with Authorization %q", r.URL, r.Header.Get("Authorization"))
	}
}
