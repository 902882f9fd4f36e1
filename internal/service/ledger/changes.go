package ledger

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
)

// MinOldKept is the least of a field's old value an edit's event keeps in
// full: an old value larger than both its new value and this is cut
// (cks.FieldChange.OldCut), so that an event is at most about twice its
// edit's own size plus this much a field, however large the values it
// replaced — an edit that shrinks a 64 KiB description to a line keeps the
// first 4 KiB of the old one.
const MinOldKept = 4 << 10

// editChanges is the Changes of the event of edit p of task cur (the row
// as it was before the edit), whose add_children gave children: each field
// p sets, in the order of p.Fields, with the value it had and the value p
// gives it, as the JSON the event stores ("" for none). runAfter is the
// task's run_after after the edit.
func editChanges(cur driver.TaskRow, p cks.TaskPatch, children []cks.Task, runAfter time.Time, budget, newBudget budget) (string, error) {
	var out []cks.FieldChange
	for _, f := range p.Fields() {
		var c cks.FieldChange
		switch f {
		case "title":
			c = textChange(cur.Title, *p.Title)
		case "description":
			c = textChange(cur.Description, *p.Description)
		case "acceptance_criteria":
			c = textChange(cur.AcceptanceCriteria, *p.AcceptanceCriteria)
		case "payload":
			c = jsonChange(cur.Payload, p.Payload)
		case "metadata":
			c = jsonChange(cur.Metadata, p.Metadata)
		case "priority":
			c = cks.FieldChange{Old: jsonOf(cur.Priority), New: jsonOf(*p.Priority)}
		case "expires_at":
			c = cks.FieldChange{Old: timeJSON(cur.ExpiresAt), New: timeJSON(driver.Time(p.ExpiresAt))}
		case "run_after", "delay":
			// The time the task is held back until, before and after
			// (a delay is recorded as the time it came to).
			c = cks.FieldChange{Old: timeJSON(cur.RunAfter), New: timeJSON(runAfter)}
		case "attempt_timeout":
			d, err := cks.ParseAttemptTimeout("attempt_timeout", p.AttemptTimeout)
			if err != nil {
				return "", err
			}
			c = cks.FieldChange{Old: jsonOf(cks.FormatDuration(attemptTimeout(cur))), New: jsonOf(cks.FormatDuration(d))}
			if cur.AttemptTimeoutMs == 0 {
				c.Old = nil
			}
		case "concurrency_keys":
			old, err := decodeKeys(cur.ConcurrencyKeys)
			if err != nil {
				return "", err
			}
			c = cks.FieldChange{Old: jsonOf(orEmpty(old)), New: jsonOf(orEmpty(*p.ConcurrencyKeys))}
		case "max_tokens":
			c = cks.FieldChange{Old: jsonOf(budget.MaxTokens), New: jsonOf(newBudget.MaxTokens)}
		case "max_cost":
			c = cks.FieldChange{Old: jsonOf(budget.MaxCost), New: jsonOf(newBudget.MaxCost)}
		case "add_depends_on":
			c.New = jsonOf(p.AddDependsOn)
		case "remove_depends_on":
			c.New = jsonOf(p.RemoveDependsOn)
		case "cancel_children":
			c.New = jsonOf(p.CancelChildren)
		case "add_children":
			ids := make([]int64, len(children))
			for i, ch := range children {
				ids[i] = ch.ID
			}
			c.New = jsonOf(ids)
		default:
			return "", fmt.Errorf("ledger: the change of field %s is not recorded", f)
		}
		c.Field = f
		out = append(out, c)
	}
	if len(out) == 0 {
		return "", nil
	}
	return string(jsonOf(out)), nil
}

// textChange is the change of a text field from old to new, old cut to the
// bound of MinOldKept at a character boundary.
func textChange(old, new string) cks.FieldChange {
	c := cks.FieldChange{New: jsonOf(new)}
	if keep := max(len(new), MinOldKept); len(old) > keep {
		for keep > 0 && !utf8.RuneStart(old[keep]) {
			keep--
		}
		c.OldCut, old = len(old)-keep, old[:keep]
	}
	c.Old = jsonOf(old)
	return c
}

// jsonChange is the change of a JSON field from old to new (both as
// stored); an old value beyond the bound of MinOldKept is left out (JSON
// cannot be cut and stay JSON).
func jsonChange(old, new []byte) cks.FieldChange {
	c := cks.FieldChange{New: json.RawMessage(new)}
	if len(old) > max(len(new), MinOldKept) {
		c.OldCut = len(old)
		return c
	}
	c.Old = json.RawMessage(old)
	return c
}

// jsonOf is v as compact JSON, HTML characters as they are.
func jsonOf(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("ledger: encode %T: %v", v, err)) // ints, strings and stored JSON always encode
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

// changesOf reads the Changes of a stored event.
func changesOf(e driver.TaskEventRow) ([]cks.FieldChange, error) {
	if e.Changes == "" {
		return nil, nil
	}
	var out []cks.FieldChange
	if err := json.Unmarshal([]byte(e.Changes), &out); err != nil {
		return nil, fmt.Errorf("changes of event %d of task %d: %w", e.EventID, e.TaskID, err)
	}
	return out, nil
}

// timeJSON is t as an event's JSON value (RFC 3339); nil for the zero time
// (none).
func timeJSON(t time.Time) json.RawMessage {
	if t.IsZero() {
		return nil
	}
	return jsonOf(t.UTC().Format(time.RFC3339Nano))
}

// orEmpty is keys, or an empty list for none (recorded as [], not null).
func orEmpty(keys []string) []string {
	if keys == nil {
		return []string{}
	}
	return keys
}
