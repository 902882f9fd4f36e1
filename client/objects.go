package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/cks-dev/cks"
)

// SubmitResearch submits a question to the research pipeline: a question
// object awaiting research, created by the caller's principal. r.Corpus,
// when set, must be an absolute directory path on the pipeline's host.
func (c *Client) SubmitResearch(ctx context.Context, r cks.SubmitResearchInput) (cks.Object, error) {
	return Do(ctx, c, cks.OpSubmitResearch, r)
}

// GetObject returns an object with its transition log, its edges and the
// objects linked to it (claims, critiques, syntheses, rationales).
func (c *Client) GetObject(ctx context.Context, id int64) (cks.ObjectView, error) {
	return Do(ctx, c, cks.OpGetObject, cks.ObjectInput{ObjectID: id})
}

// ObjectVersions returns the version DAG of object id: every version,
// ascending, with its parents, and the ids of the heads.
func (c *Client) ObjectVersions(ctx context.Context, id int64) (cks.VersionList, error) {
	return Do(ctx, c, cks.OpListObjectVersions, cks.ObjectInput{ObjectID: id})
}

// WriteVersion writes content (a JSON object) as a new version of object id
// based on version base. A base that is no longer a head makes a fork: the
// object then has two heads until the Fork Resolution agent merges them.
// An unknown base or content that is not a JSON object is a 400 naming
// base_version or content, an unknown object a 404.
func (c *Client) WriteVersion(ctx context.Context, id, base int64, content json.RawMessage) (cks.Version, error) {
	return Do(ctx, c, cks.OpWriteObjectVersion, cks.WriteVersionInput{ObjectID: id, BaseVersion: base, Content: content})
}

// ListObjects returns one page of objects (without log and edges).
func (c *Client) ListObjects(ctx context.Context, f cks.ObjectFilter) (cks.ObjectPage, error) {
	return Do(ctx, c, cks.OpListObjects, cks.ListObjectsInput{Status: f.Statuses, Kind: f.Kinds, Cursor: f.After, Limit: f.Limit})
}

// StreamEvents reads the hub's event stream (GET /v1/events, Server-Sent
// Events; it needs read on /) and calls on with each event's type and data
// (the JSON of an events.Event) until ctx ends (nil) or the stream breaks
// (an error). ready, when set, is called once the stream is open.
func (c *Client) StreamEvents(ctx context.Context, ready func(), on func(typ string, data []byte)) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.baseURL+cks.StreamEvents.Path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "text/event-stream")
	hc := *c.http
	hc.Timeout = 0 // the stream stays open; ctx ends it
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("cannot reach the hub at %s: %w", c.baseURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &Error{Status: resp.StatusCode, Code: cks.CodeHTTP, Message: "event stream refused: " + resp.Status}
	}
	if ready != nil {
		ready()
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var typ string
	var data strings.Builder
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if typ != "" || data.Len() > 0 {
				on(typ, []byte(data.String()))
			}
			typ = ""
			data.Reset()
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event:"):
			typ = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("event stream: %w", err)
	}
	return fmt.Errorf("event stream: the hub closed it")
}
