package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/ops"
)

// usageGroup is `cks usage`: what agents reported spending (issue 43;
// docs/spend.md). `cks usage --by model` is `cks usage show --by model`.
var usageGroup = group{name: "usage", bare: "show", commands: []command{
	opCommand("show", ops.GetUsage, opSpec[cks.GetUsageInput, cks.UsageSummary]{
		summary: "tokens and cost agents reported over --since (24h), summed --by model, type, key, task, attempt, agent " +
			"or principal, and with --every by time",
		table: func(x *reply[cks.GetUsageInput, cks.UsageSummary]) error {
			printUsageSums(x.w, x.out)
			return nil
		},
	}),
}}

// printUsageSums prints one line per row of s, then its total.
func printUsageSums(w io.Writer, s cks.UsageSummary) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	var head []string
	if s.Every != "" {
		head = append(head, "START")
	}
	for _, b := range s.By {
		head = append(head, strings.ToUpper(b))
	}
	fmt.Fprintln(tw, strings.Join(append(head, "REPORTS", "INPUT", "OUTPUT", "TOKENS", "COST ("+s.Currency+")"), "\t")+"\t")
	line := func(cells []string, r cks.UsageSum) {
		fmt.Fprintln(tw, strings.Join(append(cells, fmt.Sprint(r.Reports), fmt.Sprint(r.InputTokens), fmt.Sprint(r.OutputTokens),
			fmt.Sprint(r.Tokens), r.Cost.String()), "\t")+"\t")
	}
	for _, r := range s.Rows {
		var cells []string
		if s.Every != "" {
			cells = append(cells, r.Start.Format("2006-01-02 15:04"))
		}
		for _, b := range s.By {
			cells = append(cells, cmp.Or(r.Group[b], "-"))
		}
		line(cells, r)
	}
	if len(s.By) > 0 || s.Every != "" {
		line(append(slices.Repeat([]string{""}, len(head)-1), "total"), s.Total)
	} else {
		line(nil, s.Total)
	}
	tw.Flush()
	if s.Truncated > 0 {
		fmt.Fprintf(w, "(%d more rows: --limit)\n", s.Truncated)
	}
	fmt.Fprintf(w, "since %s\n", s.Since.Format("2006-01-02 15:04:05 MST"))
}
