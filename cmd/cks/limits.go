package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/ops"
)

// limitGroup is `cks limit`: the concurrency limits on the keys tasks carry
// (issue 42).
var limitGroup = group{name: "limit", commands: []command{
	opCommand("set", ops.SetLimit, opSpec[cks.LimitInput, cks.Limit]{
		in: inputSpec{args: []string{"name"}},
		summary: "create or replace the limit NAME: per key matching --pattern, at most --max-running CLAIMED or RUNNING " +
			"tasks, and/or at most --starts claims in any --interval, and/or no claims once --max-tokens or --max-cost were " +
			"reported in the current --window",
		table: func(x *reply[cks.LimitInput, cks.Limit]) error {
			fmt.Fprintf(x.w, "limit %s: %s per key matching %s\n", x.out.Name, limitRule(x.out), x.out.Pattern)
			return nil
		},
	}),
	opCommand("list", ops.ListLimits, opSpec[struct{}, cks.LimitList]{
		summary: "the limits, each with the keys it governs that are held now",
		table: func(x *reply[struct{}, cks.LimitList]) error {
			if len(x.out.Limits) == 0 {
				fmt.Fprintln(x.w, "no concurrency limit is set")
				return nil
			}
			printLimits(x.w, x.out.Limits)
			return nil
		},
	}),
	opCommand("delete", ops.DeleteLimit, opSpec[cks.LimitNameInput, cks.LimitDeleted]{
		table: func(x *reply[cks.LimitNameInput, cks.LimitDeleted]) error {
			if x.out.Deleted {
				fmt.Fprintf(x.w, "deleted limit %s\n", x.out.Name)
			} else {
				fmt.Fprintf(x.w, "no limit %s\n", x.out.Name)
			}
			return nil
		},
	}),
}}

// printLimits prints one line per limit: its cap, how many of its keys are
// held and at the cap, and the most held keys.
func printLimits(w io.Writer, ls []cks.LimitStatus) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPATTERN\tRULE\tKEYS HELD\tAT CAP\tRUNNING (STARTED)")
	for _, l := range ls {
		keys := make([]string, len(l.Keys))
		for i, k := range l.Keys {
			keys[i] = fmt.Sprintf("%s=%d", k.Key, k.Running)
			if l.Starts > 0 {
				keys[i] += fmt.Sprintf("(%d)", k.Started)
			}
			if l.Budgeted() {
				keys[i] += fmt.Sprintf("[%d tokens, %s USD]", k.Tokens, k.Cost)
			}
		}
		if len(keys) == 0 {
			keys = []string{"-"}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", l.Name, l.Pattern, limitRule(l.Limit), l.Held, l.Saturated, strings.Join(keys, " "))
	}
	tw.Flush()
}

// limitRule says what l allows a key: "4 running", "60 per 1m", or both.
func limitRule(l cks.Limit) string {
	var parts []string
	if l.MaxRunning > 0 {
		parts = append(parts, fmt.Sprintf("%d running", l.MaxRunning))
	}
	if l.Starts > 0 {
		parts = append(parts, fmt.Sprintf("%d per %s", l.Starts, l.Interval))
	}
	if l.MaxTokens > 0 {
		parts = append(parts, fmt.Sprintf("%d tokens per %s", l.MaxTokens, l.Window))
	}
	if l.MaxCost > 0 {
		parts = append(parts, fmt.Sprintf("%s USD per %s", l.MaxCost, l.Window))
	}
	return strings.Join(parts, ", ")
}
