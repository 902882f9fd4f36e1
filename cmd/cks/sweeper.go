package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/runtime/sweeper"
)

// sweeperGroup is `cks sweeper`: the hub's in-process sweepers (ADR-015).
var sweeperGroup = group{name: "sweeper", commands: []command{
	opCommand("list", ops.ListAgents, opSpec[struct{}, cks.SweeperList]{
		table: func(x *reply[struct{}, cks.SweeperList]) error {
			printSweepers(x.w, x.out.Sweepers)
			return nil
		},
	}),
	opCommand("status", ops.AgentStatus, opSpec[cks.SweeperInput, cks.SweeperStatus]{table: printSweeper}),
	opCommand("start", ops.StartAgent, opSpec[cks.SweeperInput, cks.SweeperStatus]{table: printSweeper}),
	opCommand("stop", ops.StopAgent, opSpec[cks.SweeperInput, cks.SweeperStatus]{table: printSweeper}),
}}

// printSweeper prints one sweeper's status with the details of its last pass.
func printSweeper(x *reply[cks.SweeperInput, cks.SweeperStatus]) error {
	printSweepers(x.w, []cks.SweeperStatus{x.out})
	printDetails(x.w, x.out.Details)
	return nil
}

func printSweepers(w io.Writer, sts []cks.SweeperStatus) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SWEEPER\tRUNNING\tENABLED\tOVERRIDE\tINTERVAL\tLAST RUN\tLAST COUNT\tRUNS\tLAST ERROR")
	for _, st := range sts {
		override := "-"
		if st.DesiredRunning != nil {
			override = map[bool]string{true: "start", false: "stop"}[*st.DesiredRunning]
		}
		last, count, lastErr := "never", "-", ""
		if st.LastRunAt != nil {
			last = st.LastRunAt.Local().Format(time.TimeOnly)
		}
		if st.LastResultCount != nil {
			count = fmt.Sprint(*st.LastResultCount)
		}
		if st.LastError != nil {
			lastErr = *st.LastError
		}
		running := fmt.Sprint(st.Running)
		if st.Standby {
			running = "standby" // running, but the leader hub runs the passes
		}
		fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%s\t%s\t%s\t%d\t%s\n", st.AgentID, running, st.ConfigEnabled, override,
			time.Duration(st.IntervalS*float64(time.Second)), last, count, st.RunCount, lastErr)
	}
	tw.Flush()
	if len(sts) > 0 && sts[0].Leader != "" {
		fmt.Fprintf(w, "\nPasses run on the maintenance leader: hub %s\n", sts[0].Leader)
	}
}

// printDetails lists what a sweeper's last pass reported beyond its count
// (graph_health: orphans, dangling edges, objects on cycles, example cycles),
// one "key: value" line each, keys sorted; nothing when there are none.
func printDetails(w io.Writer, details any) {
	list := sweeper.DetailList(details)
	if len(list) == 0 {
		return
	}
	if len(list) == 1 && list[0].Key == "" {
		fmt.Fprintf(w, "\nDetails: %s\n", list[0].Value)
		return
	}
	fmt.Fprintln(w, "\nDetails of the last pass:")
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	for _, d := range list {
		fmt.Fprintf(tw, "  %s:\t%s\n", d.Key, d.Value)
	}
	tw.Flush()
}
