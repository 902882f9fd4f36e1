package mcpserver_test

import (
	"encoding/json"
	"net/http"
)

// bearer is a RoundTripper adding a bearer token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
