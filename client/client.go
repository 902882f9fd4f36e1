// Package client is the Go client of the cks HTTP API. The CLI uses it, and so
// can any Go program that talks to a hub. It speaks the types and routes of
// package cks (cks.Task, cks.OpStopTask, …) and links nothing of the server:
// no store, service, operations table or surface.
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
	"reflect"
	"strings"
	"time"

	"github.com/cks-dev/cks"
)

// Client calls one hub.
type Client struct {
	baseURL string
	token   string
	http    *http.Client
}

// New returns a client of the hub at baseURL that authenticates with token.
func New(baseURL, token string) *Client {
	return NewWithHTTP(baseURL, token, &http.Client{Timeout: 30 * time.Second})
}

// NewWithHTTP is New sending through hc: its transport (connection pooling)
// and its timeout. A program that runs many clients of one hub in one
// process gives each a transport of its own, as separate processes would
// have, since the default transport keeps only two idle connections per
// host.
func NewWithHTTP(baseURL, token string, hc *http.Client) *Client {
	return &Client{baseURL: strings.TrimRight(baseURL, "/"), token: token, http: hc}
}

// BaseURL is the URL of the hub c calls.
func (c *Client) BaseURL() string { return c.baseURL }

// Token is the bearer token c authenticates with.
func (c *Client) Token() string { return c.token }

// Error is an error answered by the hub (cks.Error): its HTTP status, code,
// message and, for bad input, the offending field.
type Error = cks.Error

// DataDir is where a local hub leaves its URL and admin token (a
// datadir.Dir).
type DataDir interface {
	ReadURL() (string, error)
	ReadToken() (string, error)
	URLFile() string
	TokenFile() string
}

// Discover settles the hub URL and token. Non-empty arguments (from flags or
// the environment) win; otherwise they are read from the data directory a local
// hub writes them to. The directory's admin token goes only to the
// directory's hub: with a URL given and no token, it is used when the URL is
// the one the directory holds, and otherwise the error says to pass a token.
// The error says every place that was looked at.
func Discover(baseURL, token string, dir DataDir) (string, string, error) {
	given := baseURL != ""
	if !given {
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
	if token != "" {
		return baseURL, token, nil
	}
	if given {
		if local, err := dir.ReadURL(); err != nil || strings.TrimRight(local, "/") != strings.TrimRight(baseURL, "/") {
			serves := "no hub serves from it"
			if err == nil {
				serves = "its hub is " + local
			}
			return "", "", fmt.Errorf("no token for the hub at %s: pass --token or set CKS_TOKEN (`cks token create` on that hub "+
				"makes one); the admin token of data directory %s goes only to that directory's hub, and %s", baseURL, dir, serves)
		}
	}
	t, err := dir.ReadToken()
	if err != nil {
		return "", "", fmt.Errorf("no token: pass --token, set CKS_TOKEN, or run where the hub's data directory is (%s: %w)",
			dir.TokenFile(), unwrapPath(err))
	}
	return baseURL, t, nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Call calls operation op (a cks endpoint such as cks.OpStopTask, or an
// operation of the hub's table) with input in: a pointer to op's input
// type, or any value that encodes as the same JSON object (a
// json.RawMessage, a map), sent as the API reads it (path, query, JSON body;
// cks.Request). The output is decoded into out (nil: discarded). A call that
// may wait (a stop awaiting an abort confirmation: an input that is a
// cks.Waiter) gets the client's timeout extended by its wait. An error
// answer becomes an *Error carrying the hub's message as it is.
func (c *Client) Call(ctx context.Context, op cks.Operation, in, out any) error {
	method, path, body, err := cks.Request(op, in)
	if err != nil {
		return err
	}
	typed := in
	if reflect.TypeOf(in) != reflect.TypeOf(op.NewInput()) {
		// Only for the wait: the hub decodes and checks the input.
		typed = op.NewInput()
		if raw, err := json.Marshal(in); err == nil {
			json.Unmarshal(raw, typed) //nolint:errcheck // a bad input is the hub's to refuse
		}
	}
	hc := c.http
	if w, ok := typed.(cks.Waiter); ok && hc.Timeout > 0 {
		if wait := w.MaxWait(); wait > 0 {
			long := *c.http
			long.Timeout += wait
			hc = &long
		}
	}
	return c.send(ctx, hc, method, path, body, out)
}

// Do is Call with the types of endpoint e: it returns e's output for input in.
func Do[In, Out any](ctx context.Context, c *Client, e cks.Endpoint[In, Out], in In) (Out, error) {
	var out Out
	err := c.Call(ctx, e, &in, &out)
	return out, err
}

// send sends body (when non-nil) as JSON and decodes the answer into out
// (when non-nil). An error answer becomes an *Error.
func (c *Client) send(ctx context.Context, hc *http.Client, method, path string, body []byte, out any) error {
	var reqBody io.Reader
	if body != nil {
		reqBody = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.baseURL+path, reqBody)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach the hub at %s: %w", c.baseURL, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("read response of %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 400 {
		var e cks.ErrorBody
		if json.Unmarshal(data, &e) != nil || e.Error.Code == "" {
			return &Error{Status: resp.StatusCode, Code: cks.CodeHTTP, Message: strings.TrimSpace(string(data))}
		}
		e.Error.Status = resp.StatusCode
		return &e.Error
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if raw, ok := out.(*json.RawMessage); ok {
		*raw = append((*raw)[:0], data...)
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode response of %s %s: %w", method, path, err)
	}
	return nil
}

// Health checks that the hub answers /healthz.
func (c *Client) Health(ctx context.Context) error {
	return c.send(ctx, c.http, http.MethodGet, "/healthz", nil, nil)
}

// ListProcesses returns every agent process instance with its computed
// status: the whole history, read a page at a time.
func (c *Client) ListProcesses(ctx context.Context) ([]cks.Process, error) {
	var all []cks.Process
	in := cks.ListProcessesInput{History: true, Limit: cks.MaxListLimit}
	for {
		page, err := c.Processes(ctx, in)
		all = append(all, page.Processes...)
		if err != nil || page.Next == "" {
			return all, err
		}
		in.Cursor = page.Next
	}
}

// Processes returns one page of list_processes: by default the live
// instances (the newest of each kind and every alive one).
func (c *Client) Processes(ctx context.Context, in cks.ListProcessesInput) (cks.ProcessList, error) {
	return Do(ctx, c, cks.OpListProcesses, in)
}

// ProcessStatus returns the newest instance of kind; Status is "not_found" when
// none ever reported.
func (c *Client) ProcessStatus(ctx context.Context, kind string) (cks.Process, error) {
	return Do(ctx, c, cks.OpProcessStatus, cks.ProcessInput{ProcessKind: kind})
}

// ReportProcess is one heartbeat of a process that reports its liveness
// over the API (report_process): the answer's DesiredState is
// cks.DesiredStopRequested once it is asked to stop.
func (c *Client) ReportProcess(ctx context.Context, in cks.ReportProcessInput) (cks.Process, error) {
	return Do(ctx, c, cks.OpReportProcess, in)
}

// StopProcess asks a standalone agent process to finish its current task and
// exit (ADR-016): target is a process kind (its newest instance) or an
// instance id. Found is false, with no error, when no alive instance was
// there to ask. There is no start.
func (c *Client) StopProcess(ctx context.Context, target string) (cks.ProcessStopResult, error) {
	return Do(ctx, c, cks.OpRequestProcessStop, cks.ProcessInput{ProcessKind: target})
}
