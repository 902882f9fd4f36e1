package cks

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Usage and spend (issue 43; docs/spend.md): what the attempts of a task
// report spending — tokens and money — and the budgets that stop a task
// when it has spent them.

// Cost is an amount of money, exact: a count of billionths of its
// currency's unit (never a float, so sums never drift). It reads and
// writes as a decimal string, "0.0125".
type Cost int64

// CostDigits is how many digits after the point a cost may have;
// CostMaxWhole how many before it: a cost of one report or budget is less
// than a billion units.
const (
	CostDigits   = 9
	CostMaxWhole = 9
)

// The bounds of a usage report.
const (
	// MaxUsageTokens bounds the tokens of one report, of either kind, and
	// a task's max_tokens.
	MaxUsageTokens = 1_000_000_000_000
	// MaxModelLen bounds a report's model name.
	MaxModelLen = 200
	// CurrencyUSD is the currency of every cost: cks sums money in one
	// currency and converts none (docs/spend.md#currency).
	CurrencyUSD = "USD"
)

// CostPattern is the regular expression of a cost's text (ParseCost).
const CostPattern = `^[0-9]{1,9}(\.[0-9]{1,9})?$`

// costExpected is what a cost field holds, in its refusals.
var costExpected = fmt.Sprintf("a decimal amount as a string, such as \"0.0125\": not negative, at most %d digits before the point and %d after", CostMaxWhole, CostDigits)

// ParseCost reads s, a decimal such as "0.0125" or "12", as a Cost, or
// returns a FieldError naming field: a sign, an exponent, more than
// CostMaxWhole digits before the point or CostDigits after it are
// refused, so every accepted text is held exactly.
func ParseCost(field, s string) (Cost, error) {
	whole, frac, dotted := strings.Cut(s, ".")
	if whole == "" || len(whole) > CostMaxWhole || len(frac) > CostDigits || (dotted && frac == "") ||
		!allDigits(whole) || !allDigits(frac) {
		return 0, fieldError(field, costExpected)
	}
	frac += strings.Repeat("0", CostDigits-len(frac))
	w, _ := strconv.ParseInt(whole, 10, 64) // at most 9 digits
	f, _ := strconv.ParseInt(frac, 10, 64)
	return Cost(w*1_000_000_000 + f), nil
}

// ParseBudget reads a budget's max_tokens and max_cost (a decimal string,
// "" for none), as a task's (create_task, update_task) and a limit's
// (set_limit) are read; a FieldError names the field as name makes it
// ("max_tokens", "tasks[2].max_cost").
func ParseBudget(maxTokens int64, maxCost string, name func(field string) string) (int64, Cost, error) {
	if maxTokens < 0 || maxTokens > MaxUsageTokens {
		return 0, 0, fieldError(name("max_tokens"), fmt.Sprintf("a budget of tokens from 1 to %d (0 or absent: none)", int64(MaxUsageTokens)))
	}
	if maxCost == "" {
		return maxTokens, 0, nil
	}
	cost, err := ParseCost(name("max_cost"), maxCost)
	return maxTokens, cost, err
}

func allDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// String writes c as a decimal without trailing zeros: "0.0125", "12".
func (c Cost) String() string {
	sign := ""
	if c < 0 {
		sign, c = "-", -c
	}
	whole, frac := int64(c)/1_000_000_000, int64(c)%1_000_000_000
	if frac == 0 {
		return sign + strconv.FormatInt(whole, 10)
	}
	return sign + strconv.FormatInt(whole, 10) + "." + strings.TrimRight(fmt.Sprintf("%09d", frac), "0")
}

// MarshalJSON writes c as a JSON string, so a reader never takes it for a
// float.
func (c Cost) MarshalJSON() ([]byte, error) { return []byte(`"` + c.String() + `"`), nil }

// UnmarshalJSON reads the JSON string MarshalJSON writes.
func (c *Cost) UnmarshalJSON(b []byte) error {
	s, err := strconv.Unquote(string(b))
	if err != nil {
		return fmt.Errorf("cost: expected a JSON string, got %s", b)
	}
	neg := strings.HasPrefix(s, "-")
	v, err := ParseCost("cost", strings.TrimPrefix(s, "-"))
	if err != nil {
		return err
	}
	if neg {
		v = -v
	}
	*c = v
	return nil
}

// ReportUsageInput is the input of report_usage: what one call of the
// running attempt spent, reported by the holder of its lease.
type ReportUsageInput struct {
	LeaseInput
	Model        string `json:"model,omitempty" jsonschema:"the model the call used (gpt-5, claude-sonnet-4); empty for none"`
	InputTokens  int64  `json:"input_tokens,omitempty" jsonschema:"tokens sent (prompt), 0 or more"`
	OutputTokens int64  `json:"output_tokens,omitempty" jsonschema:"tokens received (completion), 0 or more"`
	Cost         string `json:"cost,omitempty" jsonschema:"what the call cost, as a decimal string such as \"0.0125\" (never a JSON number: floats round); empty for 0"`
	Currency     string `json:"currency,omitempty" jsonschema:"the cost's currency: USD, the one cks sums (the default)"`
}

// UsageInput is what one call of an attempt spent, as its executor reports
// it (report_usage's fields, the cost read).
type UsageInput struct {
	Model        string `json:"model,omitempty"`
	InputTokens  int64  `json:"input_tokens,omitempty"`
	OutputTokens int64  `json:"output_tokens,omitempty"`
	Cost         Cost   `json:"cost,omitempty"`
	// Principal is who reported. It is never read from JSON: the surfaces
	// set it to the authenticated caller.
	Principal string `json:"-"`
}

// Usage is one report of what an attempt spent.
type Usage struct {
	ID              int64     `json:"usage_id"`
	TaskID          int64     `json:"task_id"`
	Attempt         int       `json:"attempt"`
	Restart         int       `json:"restart"`
	Type            string    `json:"type"`
	ConcurrencyKeys []string  `json:"concurrency_keys,omitempty"`
	Model           string    `json:"model,omitempty"`
	InputTokens     int64     `json:"input_tokens"`
	OutputTokens    int64     `json:"output_tokens"`
	Cost            Cost      `json:"cost"`
	Currency        string    `json:"currency"`
	Agent           string    `json:"agent,omitempty"`
	Principal       string    `json:"principal,omitempty"`
	ReportedAt      time.Time `json:"reported_at"`
}

// TaskSpend is what a task's attempts reported spending, and its budget.
type TaskSpend struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	// Tokens is InputTokens + OutputTokens: what max_tokens bounds.
	Tokens int64 `json:"tokens"`
	Cost   Cost  `json:"cost"`
	// Reports counts the report_usage calls.
	Reports int64 `json:"reports"`
	// MaxTokens and MaxCost are the task's budget (0: none).
	MaxTokens int64  `json:"max_tokens,omitempty"`
	MaxCost   Cost   `json:"max_cost,omitempty"`
	Currency  string `json:"currency"`
}

// Over reports which of s's budgets its spend has used up, as the
// question of the NEEDS_INPUT it moves its task to says it; "" when none.
// A budget is used up when the spend reaches it: a task that has spent
// all it may does not start another call.
func (s TaskSpend) Over() string {
	switch {
	case s.MaxTokens > 0 && s.Tokens >= s.MaxTokens:
		return fmt.Sprintf("spent %d tokens of the %d allowed (max_tokens)", s.Tokens, s.MaxTokens)
	case s.MaxCost > 0 && s.Cost >= s.MaxCost:
		return fmt.Sprintf("spent %s %s of the %s allowed (max_cost)", s.Cost, s.Currency, s.MaxCost)
	}
	return ""
}

// UsageReport is the output of report_usage.
type UsageReport struct {
	Usage Usage `json:"usage"`
	// Spend is the task's spend with this report.
	Spend TaskSpend `json:"spend"`
	// BudgetExceeded, when set, says which budget this report used up
	// (TaskSpend.Over): the task moved to NEEDS_INPUT with it as its
	// question, and its attempt was aborted — the lease is gone, and the
	// executor stops and confirms the abort.
	BudgetExceeded string `json:"budget_exceeded,omitempty"`
}

// UsageGroupings are the dimensions get_usage sums by.
var UsageGroupings = []string{"model", "type", "key", "task", "attempt", "agent", "principal"}

// The bounds of get_usage.
const (
	DefaultUsageSince = 24 * time.Hour
	MaxUsageSince     = 366 * 24 * time.Hour
	MinUsageEvery     = time.Minute
	MaxUsageRows      = 1000
)

// GetUsageInput is the input of get_usage: sums of the reports of a
// window, grouped.
type GetUsageInput struct {
	By     Names    `json:"by,omitempty" jsonschema:"what to sum by: any of model, type, key (each of a report's concurrency keys), task, attempt, agent, principal; none: one total"`
	Since  Duration `json:"since,omitempty" jsonschema:"the window: reports of the last this long, such as 1h or 7d (24h by default, at most 366 days); a number of seconds also does"`
	Every  Duration `json:"every,omitempty" jsonschema:"also sum by time: buckets this long (at least 1m), such as 1h, each row's start its bucket's"`
	TaskID int64    `json:"task_id,omitempty" jsonschema:"only this task's reports"`
	Type   string   `json:"type,omitempty" jsonschema:"only reports of tasks of this type"`
	Key    string   `json:"key,omitempty" jsonschema:"only reports of tasks that held this concurrency key"`
	Model  string   `json:"model,omitempty" jsonschema:"only reports of this model"`
	Limit  int      `json:"limit,omitempty" jsonschema:"at most this many rows, the costliest first (1 to 1000, default 100)"`
}

// UsageSum is one sum of get_usage: the reports of one group.
type UsageSum struct {
	// Group holds the row's value of each dimension of By.
	Group map[string]string `json:"group,omitempty"`
	// Start is the start of the row's time bucket (with Every).
	Start        time.Time `json:"start,omitzero"`
	Reports      int64     `json:"reports"`
	InputTokens  int64     `json:"input_tokens"`
	OutputTokens int64     `json:"output_tokens"`
	Tokens       int64     `json:"tokens"`
	Cost         Cost      `json:"cost"`
}

// UsageSummary is the output of get_usage.
type UsageSummary struct {
	Since    time.Time `json:"since"`
	Until    time.Time `json:"until"`
	By       []string  `json:"by,omitempty"`
	Every    Duration  `json:"every,omitempty"`
	Currency string    `json:"currency"`
	// Rows are the groups, by Start, then costliest first (at most
	// Limit); Total sums every report of the window, Truncated counts the
	// rows left out.
	Rows      []UsageSum `json:"rows"`
	Total     UsageSum   `json:"total"`
	Truncated int        `json:"truncated,omitempty"`
}
