package cks

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Flow control (issue 42): rules that decide when a task may be claimed
// beyond its own state: the task types paused fleet-wide, and the
// concurrency limits on the keys tasks carry.

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

// Concurrency keys and limits (issue 42 item 1; docs/flow-control.md#limits).
// A task carries up to MaxConcurrencyKeys keys (NewTask.ConcurrencyKeys),
// such as "openai" or "openai:gpt-5". A limit is a named rule: a key
// pattern, exact or a prefix ending in "*", and MaxRunning. Every key a
// pattern matches has a cap of its own (the pattern "user:*" with
// max_running 2 lets each user run two tasks), and a key is governed by
// its most specific limit: an exact pattern before any prefix, a longer
// prefix before a shorter one. A claim never takes a task while one of its
// keys holds its cap in CLAIMED and RUNNING tasks, counted across every
// hub and agent on the database.
const (
	// MaxConcurrencyKeys bounds the keys of one task.
	MaxConcurrencyKeys = 4
	// MaxConcurrencyKeyLen bounds a key, and a limit's pattern.
	MaxConcurrencyKeyLen = 128
	// ConcurrencyKeyPattern is the rule of a key, as the input schemas
	// state it.
	ConcurrencyKeyPattern = `^[A-Za-z0-9][A-Za-z0-9_.:/@+=-]*$`
	// LimitPatternPattern is the rule of a limit's pattern: a key, or a
	// key's prefix (possibly empty) followed by "*".
	LimitPatternPattern = `^([A-Za-z0-9][A-Za-z0-9_.:/@+=-]*\*?|\*)$`
	// MaxLimitNameLen bounds a limit's name.
	MaxLimitNameLen = 100
	// MaxLimitRunning bounds a limit's max_running, and its starts.
	MaxLimitRunning = 100000
	// MinLimitInterval and MaxLimitInterval bound a rate limit's interval.
	MinLimitInterval = time.Second
	MaxLimitInterval = 24 * time.Hour
	// MinBudgetWindow and MaxBudgetWindow bound a spend budget's window.
	MinBudgetWindow = time.Minute
	MaxBudgetWindow = 31 * 24 * time.Hour
)

var (
	concurrencyKeyRE = regexp.MustCompile(ConcurrencyKeyPattern)
	limitPatternRE   = regexp.MustCompile(LimitPatternPattern)
)

// ExpectedConcurrencyKey is what a refused concurrency key was expected to be.
var ExpectedConcurrencyKey = fmt.Sprintf("a concurrency key such as openai:gpt-5: letters, digits and _ . : / @ + = - (starting with a letter or digit, at most %d bytes)", MaxConcurrencyKeyLen)

// ExpectedLimitPattern is what a refused limit pattern was expected to be.
var ExpectedLimitPattern = fmt.Sprintf("a concurrency key (openai:gpt-5), or a key's prefix ending in * (openai:*, or * alone for every key); at most %d bytes; * only at the end", MaxConcurrencyKeyLen)

// ValidateConcurrencyKeys reports a FieldError naming field unless keys
// are at most MaxConcurrencyKeys concurrency keys (ConcurrencyKeyPattern),
// and returns them without repeats, in their order.
func ValidateConcurrencyKeys(field string, keys []string) ([]string, error) {
	if len(keys) > MaxConcurrencyKeys {
		return nil, fieldError(field, fmt.Sprintf("at most %d concurrency keys, got %d", MaxConcurrencyKeys, len(keys)))
	}
	out := make([]string, 0, len(keys))
	for i, k := range keys {
		if err := validateName(field, k, concurrencyKeyRE, MaxConcurrencyKeyLen, ExpectedConcurrencyKey); err != nil {
			fe := err.(*FieldError)
			fe.Expected += fmt.Sprintf(" (item %d)", i)
			return nil, fe
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out, nil
}

// Limit is a concurrency and rate limit (set_limit): every key Pattern
// matches may be held by at most MaxRunning CLAIMED or RUNNING tasks at
// once (0: no cap), and claimed at most Starts times in any Interval
// (Starts 0: no rate limit).
type Limit struct {
	Name       string   `json:"name"`
	Pattern    string   `json:"pattern"`
	MaxRunning int      `json:"max_running,omitempty"`
	Starts     int      `json:"starts,omitempty"`
	Interval   Duration `json:"interval,omitempty"`
	// MaxTokens and MaxCost per Window are a spend budget (issue 43): a
	// key whose tasks reported that much in the current window is not
	// claimed until the next (windows aligned to the Unix epoch: 1h on the
	// hour, 24h at 00:00 UTC).
	MaxTokens int64     `json:"max_tokens,omitempty"`
	MaxCost   Cost      `json:"max_cost,omitempty"`
	Window    Duration  `json:"window,omitempty"`
	CreatedBy string    `json:"created_by,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Matches reports whether key is one of l's keys: Pattern itself, or a key
// starting with Pattern's prefix when Pattern ends in "*".
func (l Limit) Matches(key string) bool {
	if p, ok := strings.CutSuffix(l.Pattern, "*"); ok {
		return strings.HasPrefix(key, p)
	}
	return key == l.Pattern
}

// MoreSpecific reports whether l governs a key both l and m match: an
// exact pattern before a prefix, a longer prefix before a shorter one, and
// between equal patterns (which set_limit refuses) the first name.
func (l Limit) MoreSpecific(m Limit) bool {
	le, me := !strings.HasSuffix(l.Pattern, "*"), !strings.HasSuffix(m.Pattern, "*")
	switch {
	case le != me:
		return le
	case len(l.Pattern) != len(m.Pattern):
		return len(l.Pattern) > len(m.Pattern)
	}
	return l.Name < m.Name
}

// LimitInput is the input of set_limit: the limit named Name is created,
// or replaced with this pattern and cap.
type LimitInput struct {
	Name       string `json:"name" jsonschema:"the limit's name: letters, digits and _ - . : (starting with a letter or digit)"`
	Pattern    string `json:"pattern" jsonschema:"the keys it caps: a key (openai:gpt-5) or a prefix ending in * (openai:*); each matching key has its own cap"`
	MaxRunning int    `json:"max_running,omitempty" jsonschema:"how many CLAIMED or RUNNING tasks may hold each matching key at once (0 or absent: no cap)"`
	// Starts and Interval make it a rate limit: at most Starts claims of
	// tasks holding each matching key in any Interval.
	Starts   int      `json:"starts,omitempty" jsonschema:"how many tasks holding each matching key may be claimed in any interval (0 or absent: no rate limit)"`
	Interval Duration `json:"interval,omitempty" jsonschema:"the rate limit's sliding window, such as 1m or 1h (1s to 24h); with starts"`
	// MaxTokens and MaxCost per Window make it a spend budget.
	MaxTokens int64    `json:"max_tokens,omitempty" jsonschema:"how many tokens the tasks holding each matching key may report in a window before no more of them is claimed (0 or absent: none); with window"`
	MaxCost   string   `json:"max_cost,omitempty" jsonschema:"how much cost in USD (a decimal string such as \"50\") the tasks holding each matching key may report in a window before no more of them is claimed; with window"`
	Window    Duration `json:"window,omitempty" jsonschema:"the spend budget's window, such as 1h or 24h (1m to 744h), aligned to the Unix epoch (24h: UTC days); with max_tokens or max_cost"`
}

// WindowDuration is in.Window parsed (0 when empty), or a FieldError
// naming window when it is not a duration from MinBudgetWindow to
// MaxBudgetWindow in whole seconds.
func (in LimitInput) WindowDuration() (time.Duration, error) {
	if in.Window == "" {
		return 0, nil
	}
	v, err := time.ParseDuration(string(in.Window))
	if err != nil || v < MinBudgetWindow || v > MaxBudgetWindow || v%time.Second != 0 {
		return 0, fieldError("window", fmt.Sprintf("a duration such as 1h or 24h, from %s to %.0fh", MinBudgetWindow, MaxBudgetWindow.Hours()))
	}
	return v, nil
}

// Budget is in's spend budget: MaxTokens, MaxCost read (ParseCost) and
// Window; a FieldError names the field that is not one.
func (in LimitInput) Budget() (tokens int64, cost Cost, window time.Duration, err error) {
	if tokens, cost, err = ParseBudget(in.MaxTokens, in.MaxCost, func(f string) string { return f }); err != nil {
		return 0, 0, 0, err
	}
	if window, err = in.WindowDuration(); err != nil {
		return 0, 0, 0, err
	}
	switch {
	case (tokens > 0 || cost > 0) && window == 0:
		return 0, 0, 0, fieldError("window", "the budget's window, such as 1h or 24h, with max_tokens or max_cost")
	case tokens == 0 && cost == 0 && window != 0:
		return 0, 0, 0, fieldError("max_tokens", "a budget (max_tokens or max_cost) with window")
	}
	return tokens, cost, window, nil
}

// IntervalDuration is in.Interval parsed (0 when empty), or a FieldError
// naming interval when it is not a duration from MinLimitInterval to
// MaxLimitInterval.
func (in LimitInput) IntervalDuration() (time.Duration, error) {
	if in.Interval == "" {
		return 0, nil
	}
	v, err := time.ParseDuration(string(in.Interval))
	if err != nil || v < MinLimitInterval || v > MaxLimitInterval || v%time.Millisecond != 0 {
		return 0, fieldError("interval", fmt.Sprintf("a duration such as 1m or 1h, from %s to %.0fh", MinLimitInterval, MaxLimitInterval.Hours()))
	}
	return v, nil
}

// ValidateLimitName reports a FieldError naming field unless s is a
// limit's name (the rule of a schedule's name: one segment of its resource
// path /limits/NAME).
func ValidateLimitName(field, s string) error {
	return validateName(field, s, scheduleNameRE, MaxLimitNameLen, ExpectedScheduleName)
}

// Validate reports the first field of in that set_limit must refuse.
func (in LimitInput) Validate() error {
	if err := ValidateLimitName("name", in.Name); err != nil {
		return err
	}
	if err := validateName("pattern", in.Pattern, limitPatternRE, MaxConcurrencyKeyLen, ExpectedLimitPattern); err != nil {
		return err
	}
	switch {
	case in.MaxRunning < 0 || in.MaxRunning > MaxLimitRunning:
		return fieldError("max_running", fmt.Sprintf("an integer from 1 to %d (0: no cap)", MaxLimitRunning))
	case in.Starts < 0 || in.Starts > MaxLimitRunning:
		return fieldError("starts", fmt.Sprintf("an integer from 1 to %d (0: no rate limit)", MaxLimitRunning))
	}
	tokens, cost, _, err := in.Budget()
	if err != nil {
		return err
	}
	if in.MaxRunning == 0 && in.Starts == 0 && tokens == 0 && cost == 0 {
		return fieldError("max_running", "a cap of at least 1, or starts and interval (a rate limit), or max_tokens or max_cost with window (a spend budget), or several")
	}
	d, err := in.IntervalDuration()
	switch {
	case err != nil:
		return err
	case in.Starts > 0 && d == 0:
		return fieldError("interval", "the rate limit's window, such as 1m, with starts")
	case in.Starts == 0 && d != 0:
		return fieldError("starts", "how many claims per interval, with interval")
	}
	return nil
}

// LimitNameInput names a limit (delete_limit).
type LimitNameInput struct {
	Name string `json:"name" jsonschema:"the limit's name"`
}

// LimitDeleted is the output of delete_limit: Deleted is false when no
// limit had the name (deleting is idempotent).
type LimitDeleted struct {
	Name    string `json:"name"`
	Deleted bool   `json:"deleted"`
}

// KeyRunning is how many CLAIMED or RUNNING tasks hold a key now, and how
// many were claimed in its limit's current window (a rate limit's).
type KeyRunning struct {
	Key     string `json:"key"`
	Running int    `json:"running"`
	Started int    `json:"started,omitempty"`
	// Tokens and Cost are what its tasks reported spending in the current
	// window of its limit's budget.
	Tokens int64 `json:"tokens,omitempty"`
	Cost   Cost  `json:"cost,omitempty"`
}

// Full reports whether a key l governs, with k's use, may not be claimed
// now: its holders are at l's cap, its starts in the window at l's rate,
// or its spend in the current window at l's budget (Spent).
func (l Limit) Full(k KeyRunning) bool {
	return (l.MaxRunning > 0 && k.Running >= l.MaxRunning) || (l.Starts > 0 && k.Started >= l.Starts) || l.Spent(k)
}

// Spent reports whether a key l governs, with k's use, has used l's spend
// budget up in the current window: its tokens or its cost reached it.
func (l Limit) Spent(k KeyRunning) bool {
	return (l.MaxTokens > 0 && k.Tokens >= l.MaxTokens) || (l.MaxCost > 0 && k.Cost >= l.MaxCost)
}

// Budgeted reports whether l has a spend budget.
func (l Limit) Budgeted() bool { return l.MaxTokens > 0 || l.MaxCost > 0 }

// LimitStatus is a limit with the keys it governs that are held now, the
// most held first (at most MaxLimitKeysShown; Held counts them all).
type LimitStatus struct {
	Limit
	Keys []KeyRunning `json:"keys"`
	// Held is how many keys the limit governs that are held now.
	Held int `json:"held"`
	// Saturated is how many of them are at the cap.
	Saturated int `json:"saturated"`
}

// MaxLimitKeysShown bounds LimitStatus.Keys.
const MaxLimitKeysShown = 20

// LimitList is the output of list_limits, by name.
type LimitList struct {
	Limits []LimitStatus `json:"limits"`
}
