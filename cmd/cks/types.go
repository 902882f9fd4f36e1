package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/ops"
)

// typeGroup is `cks type`: the flow control of task types (issue 42).
var typeGroup = group{name: "type", commands: []command{
	opCommand("pause", ops.PauseType, opSpec[cks.PauseTypeInput, cks.PausedType]{
		in: inputSpec{args: []string{"type"}},
		table: func(x *reply[cks.PauseTypeInput, cks.PausedType]) error {
			printPausedTypes(x.w, []cks.PausedType{x.out})
			return nil
		},
	}),
	opCommand("resume", ops.ResumeType, opSpec[cks.TypeInput, cks.TypeResumed]{
		in: inputSpec{args: []string{"type"}},
		table: func(x *reply[cks.TypeInput, cks.TypeResumed]) error {
			if x.out.Resumed {
				fmt.Fprintf(x.w, "resumed %s\n", x.out.Type)
			} else {
				fmt.Fprintf(x.w, "%s was not paused\n", x.out.Type)
			}
			return nil
		},
	}),
	opCommand("paused", ops.ListPausedTypes, opSpec[struct{}, cks.PausedTypeList]{
		table: func(x *reply[struct{}, cks.PausedTypeList]) error {
			if len(x.out.Types) == 0 {
				fmt.Fprintln(x.w, "no task type is paused")
				return nil
			}
			printPausedTypes(x.w, x.out.Types)
			return nil
		},
	}),
}}

func printPausedTypes(w io.Writer, ts []cks.PausedType) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TYPE\tPAUSED BY\tPAUSED AT\tREASON")
	for _, t := range ts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Type, t.PausedBy, t.PausedAt.Local().Format(time.DateTime), t.Reason)
	}
	tw.Flush()
}
