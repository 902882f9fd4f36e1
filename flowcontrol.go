package cks

import "time"

// Flow control (issue 42): rules that decide when a task may be claimed
// beyond its own state — for now, the task types paused fleet-wide.

// PausedType is a task type the claims of every hub and agent skip until it
// is resumed (pause_type): its OPEN tasks stay OPEN, and attempts already
// running finish as they would.
type PausedType struct {
	Type     string    `json:"type"`
	PausedBy string    `json:"paused_by"`
	Reason   string    `json:"reason,omitempty"`
	PausedAt time.Time `json:"paused_at"`
}

// PauseTypeInput is the input of pause_type.
type PauseTypeInput struct {
	Type   string `json:"type" jsonschema:"the task type to pause"`
	Reason string `json:"reason,omitempty" jsonschema:"why, shown beside the paused type (e.g. provider down)"`
}

// TypeInput names a task type (resume_type).
type TypeInput struct {
	Type string `json:"type" jsonschema:"the task type"`
}

// TypeResumed is the output of resume_type: Resumed is false when the type
// was not paused (resuming is idempotent).
type TypeResumed struct {
	Type    string `json:"type"`
	Resumed bool   `json:"resumed"`
}

// PausedTypeList is the output of list_paused_types, by type.
type PausedTypeList struct {
	Types []PausedType `json:"types"`
}
