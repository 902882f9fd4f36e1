// Package client is the Go client of the cks HTTP API. The CLI uses it, and so
// can any Go program that talks to a hub.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/cks-dev/cks/datadir"
	"github.com/cks-dev/cks/liveness"
)

// Client calls one hub.
type Client struct {
	baseURL string
	token   string
	http    *http.Client
}

// New returns a client of the hub at baseURL that authenticates with token.
func New(baseURL, token string) *Client {
	return &Client{baseURL: strings.TrimRight(baseURL, "/"), token: token, http: &http.Client{Timeout: 30 * time.Second}}
}

// Error is an error answered by the hub.
type Error struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	// Field names the offending input field of an invalid_argument error.
	Field string `json:"field,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("%s (%s, HTTP %d)", e.Message, e.Code, e.Status) }

// Discover settles the hub URL and token. Non-empty arguments (from flags or
// the environment) win; otherwise they are read from the data directory a local
// hub writes them to. The error says every place that was looked at.
func Discover(baseURL, token string, dir datadir.Dir) (string, string, error) {
	if baseURL == "" {
		u, err := dir.ReadURL()
		if err != nil {
			return "", "", fmt.Errorf("no hub URL: pass --url, set CKS_URL, or start `cks serve` with data directory %s (%s: %w)",
				dir, dir.URLFile(), errors.Unwrap(err))
		}
		baseURL = u
	}
	if _, err := url.ParseRequestURI(baseURL); err != nil || !strings.HasPrefix(baseURL, "http") {
		return "", "", fmt.Errorf("bad hub URL %q: expected http://HOST:PORT", baseURL)
	}
	if token == "" {
		t, err := dir.ReadToken()
		if err != nil {
			return "", "", fmt.Errorf("no token: pass --token, set CKS_TOKEN, or run where the hub's data directory is (%s: %w)",
				dir.TokenFile(), unwrapPath(err))
		}
		token = t
	}
	return baseURL, token, nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// do sends in (when non-nil) as a JSON body and decodes the answer into out
// (when non-nil). An error answer becomes an *Error.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	return c.doWith(ctx, c.http, method, path, in, out)
}

// doLong is do for a call the hub may hold open for up to wait (a stop or
// update waiting for an abort confirmation): the client's timeout is
// extended by wait, so the call is not cut off before the hub answers.
func (c *Client) doLong(ctx context.Context, wait time.Duration, method, path string, in, out any) error {
	hc := *c.http
	if hc.Timeout > 0 {
		hc.Timeout += wait
	}
	return c.doWith(ctx, &hc, method, path, in, out)
}

func (c *Client) doWith(ctx context.Context, hc *http.Client, method, path string, in, out any) error {
	var reqBody io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode request of %s %s: %w", method, path, err)
		}
		reqBody = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.baseURL+path, reqBody)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach the hub at %s: %w", c.baseURL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("read response of %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 400 {
		var e struct {
			Error Error `json:"error"`
		}
		if json.Unmarshal(body, &e) != nil || e.Error.Code == "" {
			return &Error{Status: resp.StatusCode, Code: "http", Message: strings.TrimSpace(string(body))}
		}
		e.Error.Status = resp.StatusCode
		return &e.Error
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("decode response of %s %s: %w", method, path, err)
	}
	return nil
}

// Health checks that the hub answers /healthz.
func (c *Client) Health(ctx context.Context) error {
	return c.do(ctx, http.MethodGet, "/healthz", nil, nil)
}

// ListProcesses returns every agent process instance with its computed status.
func (c *Client) ListProcesses(ctx context.Context) ([]liveness.Process, error) {
	var out struct {
		Processes []liveness.Process `json:"processes"`
	}
	err := c.do(ctx, http.MethodGet, "/v1/processes", nil, &out)
	return out.Processes, err
}

// ProcessStatus returns the newest instance of kind; Status is "not_found" when
// none ever reported.
func (c *Client) ProcessStatus(ctx context.Context, kind string) (liveness.Process, error) {
	var p liveness.Process
	err := c.do(ctx, http.MethodGet, "/v1/processes/"+url.PathEscape(kind), nil, &p)
	return p, err
}

// StopProcess asks a standalone agent process to finish its current task and
// exit (ADR-016): target is a process kind (its newest instance) or an
// instance id. Found is false, with no error, when no alive instance was
// there to ask. There is no start.
func (c *Client) StopProcess(ctx context.Context, target string) (liveness.StopResult, error) {
	var res liveness.StopResult
	err := c.do(ctx, http.MethodPost, "/v1/processes/"+url.PathEscape(target)+"/stop", nil, &res)
	return res, err
}
