package studio

import (
	"encoding/json"
	"strings"

	"github.com/cks-dev/cks"
)

// The task page's edit history: each update event's change of the
// description or the acceptance criteria (the fields an agent works from),
// who made it and when, as a line diff of the old and the new text.

// revisionView is one change of one text field of a task.
type revisionView struct {
	At, Shown, Actor string
	// Field is the field's name as the page says it.
	Field string
	Lines []diffLine
	// Cut is how many bytes of the old text the event did not keep.
	Cut int
}

// diffLine is one line of a diff: Op is " " kept, "-" removed, "+" added.
type diffLine struct {
	Op, Class, Text string
}

// historyFields are the fields the edit history shows, with their names.
var historyFields = map[string]string{"description": "Description", "acceptance_criteria": "Acceptance criteria"}

// maxDiffLines bounds the lines of a text the diff compares line by line;
// a longer text is shown removed and added whole.
const maxDiffLines = 400

// revisions are the text changes of events, newest first.
func revisions(events []cks.TaskEvent) []revisionView {
	var out []revisionView
	for i := len(events) - 1; i >= 0; i-- {
		e := events[i]
		for _, c := range e.Changes {
			name, ok := historyFields[c.Field]
			if !ok {
				continue
			}
			out = append(out, revisionView{At: stamp(e.At), Shown: shown(e.At), Actor: e.Actor, Field: name,
				Lines: lineDiff(jsonText(c.Old), jsonText(c.New)), Cut: c.OldCut})
		}
	}
	return out
}

// jsonText is the string a change's JSON value holds ("" for none).
func jsonText(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// lineDiff is a line diff of a and b by their longest common subsequence
// of lines.
func lineDiff(a, b string) []diffLine {
	split := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(s, "\n")
	}
	x, y := split(a), split(b)
	line := func(op, text string) diffLine {
		class := map[string]string{" ": "same", "-": "del", "+": "add"}[op]
		return diffLine{Op: op, Class: class, Text: text}
	}
	var out []diffLine
	if len(x) > maxDiffLines || len(y) > maxDiffLines {
		for _, l := range x {
			out = append(out, line("-", l))
		}
		for _, l := range y {
			out = append(out, line("+", l))
		}
		return out
	}
	// lcs[i][j] is the length of the longest common subsequence of x[i:]
	// and y[j:].
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			out = append(out, line(" ", x[i]))
			i, j = i+1, j+1
		case j < len(y) && (i == len(x) || lcs[i][j+1] > lcs[i+1][j]):
			out = append(out, line("+", y[j]))
			j++
		default:
			out = append(out, line("-", x[i]))
			i++
		}
	}
	return out
}
