package cks

import (
	"fmt"
	"time"
)

// Live output (issue 43 item 3): an executor appends chunks of what its
// attempt prints (append_output, fenced by its lease like touch_task), and
// anyone who may read the task reads them by a sequence cursor
// (get_output) or follows them as they come (GET /v1/tasks/{id}/output
// ?follow=1, the MCP resource cks://tasks/{id}/output, cks task logs -f).
const (
	// MaxOutputChunk bounds the text of one chunk, in bytes (the text
	// field's bound, MaxLongTextLen).
	MaxOutputChunk = MaxLongTextLen
	// DefaultOutputTail is how many bytes of output each attempt keeps by
	// default: past it its oldest chunks are deleted, and a note says how
	// many bytes are gone.
	DefaultOutputTail = 4 << 20
	// MaxOutputStreamLen bounds a chunk's stream label.
	MaxOutputStreamLen = 32
	// MaxOutputPage is the most chunks one get_output answers.
	MaxOutputPage = 1000
	// DefaultOutputPage is get_output's page without a limit.
	DefaultOutputPage = 100
)

// AppendOutputInput is the input of append_output.
type AppendOutputInput struct {
	LeaseInput
	// Stream labels the chunk: stdout, stderr or another short label of
	// letters, digits, '_', '-' and '.' ("" for none).
	Stream string `json:"stream,omitempty" jsonschema:"which output the chunk is of: stdout, stderr or another label of up to 32 letters, digits, _ - . (empty: none)"`
	// Text is the chunk, up to MaxOutputChunk bytes of UTF-8.
	Text string `json:"text" jsonschema:"the chunk of output, up to 65536 bytes of UTF-8 text"`
}

// OutputStreamPattern is what a chunk's stream label matches (the
// OpenAPI document's pattern; ValidateOutputStream is the rule).
const OutputStreamPattern = "^[A-Za-z0-9_.-]*$"

// ValidateOutputStream refuses a stream label that is not up to
// MaxOutputStreamLen letters, digits, '_', '-' or '.'.
func ValidateOutputStream(s string) error {
	if len(s) > MaxOutputStreamLen {
		return &FieldError{Field: "stream", Expected: fmt.Sprintf("at most %d bytes (got %d)", MaxOutputStreamLen, len(s))}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return &FieldError{Field: "stream", Expected: "letters, digits, _ - or . (such as stdout or stderr)"}
		}
	}
	return nil
}

// OutputAppended is the output of append_output: where the chunk was kept.
type OutputAppended struct {
	Seq     int64 `json:"seq" jsonschema:"the chunk's sequence number among the task's output (get_output's after cursor)"`
	Attempt int   `json:"attempt" jsonschema:"the attempt the chunk is of"`
	Offset  int64 `json:"offset" jsonschema:"bytes of the attempt's output before the chunk"`
	// Dropped is how many bytes of the attempt's oldest output its bound
	// has dropped so far (0: none).
	Dropped int64 `json:"dropped,omitempty" jsonschema:"bytes of this attempt's oldest output dropped to keep its tail within the bound"`
}

// GetOutputInput is the input of get_output.
type GetOutputInput struct {
	TaskID int64 `json:"task_id" jsonschema:"the task"`
	After  int64 `json:"after,omitempty" jsonschema:"list the chunks after this seq (the next_after of the previous page; 0: from the start)"`
	Limit  int   `json:"limit,omitempty" jsonschema:"page size, 1 to 1000 (default 100)"`
	// Follow asks the HTTP surface for a stream of Server-Sent Events of
	// the chunks as they come; other surfaces answer a page.
	Follow bool `json:"follow,omitempty" jsonschema:"over HTTP: answer Server-Sent Events (event: output, id: its seq) of the chunks after after as they are appended, resumable with Last-Event-ID, ending with event: end when the attempt ends"`
}

// OutputChunk is one chunk of a task's output as get_output answers it —
// or, with Dropped > 0 and no text, the note that an attempt's bound
// dropped that many bytes of its oldest output before the next chunk.
type OutputChunk struct {
	Seq     int64     `json:"seq"`
	Attempt int       `json:"attempt"`
	Restart int       `json:"restart,omitempty"`
	Stream  string    `json:"stream,omitempty"`
	Text    string    `json:"text,omitempty"`
	Offset  int64     `json:"offset"`
	Dropped int64     `json:"dropped,omitempty"`
	At      time.Time `json:"at"`
}

// OutputPage is the output of get_output.
type OutputPage struct {
	Chunks []OutputChunk `json:"chunks"`
	// NextAfter is the seq to read after next: the page's last, or the
	// after it was asked for when it is empty.
	NextAfter int64 `json:"next_after"`
	// More: chunks after this page exist already.
	More bool `json:"more,omitempty"`
	// State and Attempt are the task's when the page was read; Live says
	// whether an attempt is executing (CLAIMED or RUNNING), so more output
	// may come.
	State   TaskState `json:"state"`
	Attempt int       `json:"attempt"`
	Live    bool      `json:"live"`
}
