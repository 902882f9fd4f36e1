package cks

// The check of stored values against the rules of this package: rows
// stored before a bound existed (ValidateJSON's nesting, size and number
// growth; ValidateText's lengths) are still served, compactly, and
// check_stored (`cks doctor`) reports them.

// StoredKinds are what check_stored walks, in its order.
var StoredKinds = [...]string{"tasks", "objects"}

// CheckStoredInput is the input of check_stored: one page of one kind of
// row, from a cursor.
type CheckStoredInput struct {
	What   string `json:"what" jsonschema:"what to check: tasks or objects"`
	Cursor int64  `json:"cursor,omitempty" jsonschema:"the next_cursor of the previous page (0 for the first)"`
}

// StoredCheck is the answer of check_stored: the problems of one page.
type StoredCheck struct {
	Problems []StoredProblem `json:"problems"`
	// Checked is how many rows the page held.
	Checked int `json:"checked"`
	// Next is the cursor of the following page, 0 after the last.
	Next int64 `json:"next_cursor,omitempty"`
}

// StoredProblem is one stored value past a rule of today.
type StoredProblem struct {
	Kind    string `json:"kind"` // "task" or "object"
	ID      int64  `json:"id"`
	Field   string `json:"field"`
	Problem string `json:"problem"` // what the rule expects
}

// CheckStoredTask returns the problems of a stored task: each text and
// JSON field checked as a write would check it today.
func CheckStoredTask(t Task) []StoredProblem {
	var out []StoredProblem
	add := func(err error) {
		if fe, ok := err.(*FieldError); ok {
			out = append(out, StoredProblem{Kind: "task", ID: t.ID, Field: fe.Field, Problem: clipProblem(fe.Expected)})
		}
	}
	for _, f := range []struct{ name, v string }{
		{"type", t.Type}, {"title", t.Title}, {"description", t.Description},
		{"acceptance_criteria", t.AcceptanceCriteria}, {"dedupe_key", t.DedupeKey}, {"created_by", t.CreatedBy},
		{"result", t.Result}, {"last_error", t.LastError}, {"question", t.Question}, {"answer", t.Answer},
		{"review_note", t.ReviewNote},
	} {
		add(ValidateText(f.name, f.v))
	}
	add(ValidateJSON("payload", t.Payload))
	add(ValidateJSON("metadata", t.Metadata))
	return out
}

// CheckStoredObject returns the problems of a stored knowledge object.
func CheckStoredObject(o Object) []StoredProblem {
	var out []StoredProblem
	for _, err := range []error{ValidateText("kind", o.Kind), ValidateText("title", o.Title),
		ValidateText("created_by", o.CreatedBy), ValidateJSON("content", o.Content)} {
		if fe, ok := err.(*FieldError); ok {
			out = append(out, StoredProblem{Kind: "object", ID: o.ID, Field: fe.Field, Problem: clipProblem(fe.Expected)})
		}
	}
	return out
}

// clipProblem keeps a report of many problems readable: an expectation
// quotes the offending value at most this far.
func clipProblem(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	return ToText(cutRunes(s, max)) + "…"
}
