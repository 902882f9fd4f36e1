package client

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cks-dev/cks"
)

// FuzzReadOutputEvents: whatever a follow's stream carries, reading it
// never panics, hands on only chunks it decoded, and ends with an error
// unless an end event came; a well-formed stream's chunks all arrive, in
// order, with the end event's page.
func FuzzReadOutputEvents(f *testing.F) {
	chunk, _ := json.Marshal(cks.OutputChunk{Seq: 1, Attempt: 1, Stream: "stdout", Text: "hi\n"})
	end, _ := json.Marshal(cks.OutputPage{State: cks.TaskCompleted, Attempt: 1})
	f.Add("id: 1\nevent: output\ndata: " + string(chunk) + "\n\nevent: end\ndata: " + string(end) + "\n\n")
	f.Add(": keep-alive\n\nid: 2\nevent: output\ndata: {\n\n")
	f.Add("event: end\ndata: null\n\n")
	f.Add("event: output\n")
	f.Fuzz(func(t *testing.T, stream string) {
		n := 0
		page, got, err := readOutputEvents(strings.NewReader(stream), func(cks.OutputChunk) { n++ })
		if got != (n > 0) {
			t.Fatalf("got %v after %d chunks", got, n)
		}
		if err == nil && !strings.Contains(stream, "event: end") {
			t.Fatalf("no end event, no error: %+v", page)
		}
	})
}

// TestReadOutputEvents: a stream of chunks and an end arrives whole, in order.
func TestReadOutputEvents(t *testing.T) {
	var b strings.Builder
	for i := int64(1); i <= 3; i++ {
		c, _ := json.Marshal(cks.OutputChunk{Seq: i, Text: strings.Repeat("x", int(i))})
		b.WriteString("id: " + string(rune('0'+i)) + "\nevent: output\ndata: " + string(c) + "\n\n: keep-alive\n\n")
	}
	end, _ := json.Marshal(cks.OutputPage{State: cks.TaskFailed, Attempt: 2})
	b.WriteString("event: end\ndata: " + string(end) + "\n\n")
	var seqs []int64
	page, got, err := readOutputEvents(strings.NewReader(b.String()), func(c cks.OutputChunk) { seqs = append(seqs, c.Seq) })
	if err != nil || !got || page.State != cks.TaskFailed || len(seqs) != 3 || seqs[0] != 1 || seqs[2] != 3 {
		t.Fatalf("read %v, %+v, %v, %v", seqs, page, got, err)
	}
	if _, _, err := readOutputEvents(strings.NewReader(b.String()[:b.Len()-len(end)-20]), func(cks.OutputChunk) {}); err == nil {
		t.Fatal("a stream cut before its end event read as ended")
	}
}
