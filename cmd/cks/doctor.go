package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/cks-dev/cks"
)

// errProblems marks a doctor run that found stored values past a bound
// (exit status 5): the check itself worked.
var errProblems = errors.New("stored values past today's bounds")

// cmdDoctor is `cks doctor`: every stored task and object checked against
// the bounds a write meets today (check_stored, page by page), progress on
// stderr, the problems as a table or --json. It needs admin on /.
func cmdDoctor(ctx context.Context, args []string, e env) error {
	fs := flagSet("doctor", e)
	var cf clientFlags
	cf.register(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("%w: doctor takes no arguments, got %q", errUsage, pos)
	}
	cl, err := cf.client(e)
	if err != nil {
		return err
	}
	report := cks.StoredCheck{Problems: []cks.StoredProblem{}}
	for _, what := range cks.StoredKinds {
		checked := 0
		for cursor := int64(0); ; {
			page, err := cl.CheckStored(ctx, what, cursor)
			if err != nil {
				return err
			}
			checked += page.Checked
			report.Checked += page.Checked
			report.Problems = append(report.Problems, page.Problems...)
			fmt.Fprintf(e.stderr, "\rchecked %d %s, %d problems", checked, what, len(report.Problems))
			if cursor = page.Next; cursor == 0 {
				break
			}
		}
		fmt.Fprintln(e.stderr)
	}
	if cf.json {
		if err := printJSON(e.stdout, report); err != nil {
			return err
		}
	} else {
		printProblems(e.stdout, report)
	}
	if len(report.Problems) > 0 {
		return fmt.Errorf("%d %w", len(report.Problems), errProblems)
	}
	return nil
}

func printProblems(w io.Writer, r cks.StoredCheck) {
	if len(r.Problems) == 0 {
		fmt.Fprintf(w, "%d rows checked: nothing past a bound\n", r.Checked)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tID\tFIELD\tEXPECTED")
	for _, p := range r.Problems {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", p.Kind, p.ID, p.Field, p.Problem)
	}
	tw.Flush()
}
