package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cks-dev/cks"
)

// AppendOutput appends a chunk of live output (at most cks.MaxOutputChunk
// bytes of UTF-8; stream a label such as stdout, or "") to the attempt
// leaseToken leases (append_output).
func (c *Client) AppendOutput(ctx context.Context, id int64, leaseToken, stream, text string) (cks.OutputAppended, error) {
	return Do(ctx, c, cks.OpAppendOutput, cks.AppendOutputInput{LeaseInput: lease(id, leaseToken), Stream: stream, Text: text})
}

// Output reads up to limit chunks (0: the default page) of task id's
// output after seq after (get_output).
func (c *Client) Output(ctx context.Context, id, after int64, limit int) (cks.OutputPage, error) {
	return Do(ctx, c, cks.OpGetOutput, cks.GetOutputInput{TaskID: id, After: after, Limit: limit})
}

// FollowOutput follows task id's output after seq after (GET
// /v1/tasks/{id}/output?follow=1, Server-Sent Events), calling on with
// each chunk in order, until the attempt ends — it returns the task's last
// page, without chunks — or ctx ends (ctx's error). A stream that breaks
// is opened again after the last seq received (Last-Event-ID), so no chunk
// is lost or repeated; it gives up after five failures in a row. A hub
// that answers a page instead of a stream (one that does not follow) ends
// the follow with that page's chunks.
func (c *Client) FollowOutput(ctx context.Context, id, after int64, on func(cks.OutputChunk)) (cks.OutputPage, error) {
	return c.followOutput(ctx, cks.GetOutputInput{TaskID: id, After: after}, on)
}

// followOutput is FollowOutput of in (its limit sent too, which the hub's
// follow does not use: it reads a follower's pages at its own size).
func (c *Client) followOutput(ctx context.Context, in cks.GetOutputInput, on func(cks.OutputChunk)) (cks.OutputPage, error) {
	id, after := in.TaskID, in.After
	wait := 100 * time.Millisecond
	var last error
	for fails := 0; fails < 5; {
		end, got, err := c.followOnce(ctx, id, after, in.Limit, func(ch cks.OutputChunk) {
			after = ch.Seq
			on(ch)
		})
		switch {
		case err == nil:
			return end, nil
		case ctx.Err() != nil:
			return cks.OutputPage{}, ctx.Err()
		}
		var ce *Error
		if errors.As(err, &ce) && ce.Status >= 400 && ce.Status < 500 {
			return cks.OutputPage{}, err // refused: reconnecting will not help
		}
		if got {
			fails, wait = 0, 100*time.Millisecond
		}
		fails++
		last = err
		select {
		case <-ctx.Done():
			return cks.OutputPage{}, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
	return cks.OutputPage{}, fmt.Errorf("following the output of task %d: %w", id, last)
}

// followOnce reads one stream: the end event's page, whether any chunk
// came, and an error when the stream broke or was refused.
func (c *Client) followOnce(ctx context.Context, id, after int64, limit int, on func(cks.OutputChunk)) (cks.OutputPage, bool, error) {
	path := strings.Replace(cks.OpGetOutput.Route().Path, "{task_id}", strconv.FormatInt(id, 10), 1) +
		"?follow=1&after=" + strconv.FormatInt(after, 10)
	if limit > 0 {
		path += "&limit=" + strconv.Itoa(limit)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.baseURL+path, nil)
	if err != nil {
		return cks.OutputPage{}, false, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", strconv.FormatInt(after, 10))
	hc := *c.http
	hc.Timeout = 0 // the stream stays open; ctx ends it
	resp, err := hc.Do(req)
	if err != nil {
		return cks.OutputPage{}, false, fmt.Errorf("cannot reach the hub at %s: %w", c.baseURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var body cks.ErrorBody
		json.NewDecoder(resp.Body).Decode(&body) //nolint:errcheck // the status says enough without it
		e := body.Error
		e.Status = resp.StatusCode
		return cks.OutputPage{}, false, &e
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var p cks.OutputPage
		if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
			return cks.OutputPage{}, false, fmt.Errorf("output page: %w", err)
		}
		got := len(p.Chunks) > 0
		for _, ch := range p.Chunks {
			on(ch)
		}
		p.Chunks = nil
		return p, got, nil
	}
	return readOutputEvents(resp.Body, on)
}

// FollowOutputInput is FollowOutput of a get_output input (its task, its
// after and its limit; `cks task logs -f`).
func (c *Client) FollowOutputInput(ctx context.Context, in cks.GetOutputInput, on func(cks.OutputChunk)) (cks.OutputPage, error) {
	return c.followOutput(ctx, in, on)
}

// readOutputEvents reads a follow's Server-Sent Events from r: on with
// each output event's chunk; the end event's page, whether any chunk came,
// and an error for a stream that ends without an end event or carries an
// event it cannot read (FuzzReadOutputEvents).
func readOutputEvents(r io.Reader, on func(cks.OutputChunk)) (cks.OutputPage, bool, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 2*cks.MaxOutputChunk+(64<<10)) // a chunk's JSON, escaped
	var typ, data string
	got := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			switch typ {
			case "output":
				var ch cks.OutputChunk
				if err := json.Unmarshal([]byte(data), &ch); err != nil {
					return cks.OutputPage{}, got, fmt.Errorf("output event: %w", err)
				}
				got = true
				on(ch)
			case "end":
				var p cks.OutputPage
				if err := json.Unmarshal([]byte(data), &p); err != nil {
					return cks.OutputPage{}, got, fmt.Errorf("end event: %w", err)
				}
				return p, got, nil
			}
			typ, data = "", ""
		case strings.HasPrefix(line, "event: "):
			typ = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			data = line[len("data: "):]
		}
	}
	if err := sc.Err(); err != nil {
		return cks.OutputPage{}, got, fmt.Errorf("output stream: %w", err)
	}
	return cks.OutputPage{}, got, errors.New("output stream: the hub closed it before the attempt ended")
}
