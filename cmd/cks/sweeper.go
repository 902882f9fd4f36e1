package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/sweeper"
)

func cmdSweeper(ctx context.Context, args []string, e env) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: sweeper needs a subcommand: list, status ID, start ID or stop ID", errUsage)
	}
	sub, args := args[0], args[1:]
	fs := flagSet("sweeper "+sub, e)
	var cf clientFlags
	cf.register(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	switch sub {
	case "list":
		if len(pos) > 0 {
			return fmt.Errorf("%w: sweeper list takes no arguments, got %q", errUsage, pos)
		}
		cl, err := cf.client(e)
		if err != nil {
			return err
		}
		sts, err := cl.ListSweepers(ctx)
		if err != nil {
			return err
		}
		if cf.json {
			if sts == nil {
				sts = []cks.SweeperStatus{}
			}
			return printJSON(e.stdout, map[string]any{"sweepers": sts})
		}
		printSweepers(e.stdout, sts)
		return nil
	case "status", "start", "stop":
		if len(pos) != 1 {
			return fmt.Errorf("%w: sweeper %s needs exactly one sweeper ID", errUsage, sub)
		}
		cl, err := cf.client(e)
		if err != nil {
			return err
		}
		call := map[string]func(context.Context, string) (cks.SweeperStatus, error){
			"status": cl.SweeperStatus, "start": cl.StartSweeper, "stop": cl.StopSweeper,
		}[sub]
		st, err := call(ctx, pos[0])
		if err != nil {
			return err
		}
		if cf.json {
			return printJSON(e.stdout, st)
		}
		printSweepers(e.stdout, []cks.SweeperStatus{st})
		printDetails(e.stdout, st.Details)
		return nil
	default:
		return fmt.Errorf("%w: unknown sweeper subcommand %q; expected list, status, start or stop", errUsage, sub)
	}
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
		fmt.Fprintf(tw, "%s\t%v\t%v\t%s\t%s\t%s\t%s\t%d\t%s\n", st.AgentID, st.Running, st.ConfigEnabled, override,
			time.Duration(st.IntervalS*float64(time.Second)), last, count, st.RunCount, lastErr)
	}
	tw.Flush()
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
