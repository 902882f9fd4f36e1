package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/ops"
)

// taskLogsCommand is `cks task logs ID [-f] [--after SEQ] [--limit N]
// [--json]`: a page of a task's live output (get_output), its text as the
// attempt printed it; with -f (--follow) it follows the output as it is
// appended (GET …/output?follow=1), reconnecting after the last seq it
// printed, until the attempt ends or Ctrl-C.
func taskLogsCommand() command {
	c := opCommand("logs", ops.GetOutput, opSpec[cks.GetOutputInput, cks.OutputPage]{
		summary: "a task's live output (-f: follow it until the attempt ends); --json prints the page, or with -f a chunk a line",
		table: func(x *reply[cks.GetOutputInput, cks.OutputPage]) error {
			for _, ch := range x.out.Chunks {
				printChunk(x.w, ch)
			}
			if x.out.More {
				fmt.Fprintf(x.w, "[more: --after %d]\n", x.out.NextAfter)
			}
			return nil
		},
	})
	page := c.run
	c.run = func(ctx context.Context, full string, args []string, e env) error {
		for i, a := range args {
			if a == "-f" {
				args[i] = "--follow"
			}
		}
		v, cf, b, err := readInput(ops.GetOutput, inputSpec{}, full, args, e)
		if err != nil {
			return err
		}
		in := v.(*cks.GetOutputInput)
		if !in.Follow {
			return page(ctx, full, args, e)
		}
		cl, err := cf.client(e)
		if err != nil {
			return err
		}
		enc := json.NewEncoder(e.stdout)
		end, err := cl.FollowOutputInput(ctx, *in, func(ch cks.OutputChunk) {
			if cf.json {
				enc.Encode(ch) //nolint:errcheck // stdout closed: nothing to tell
				return
			}
			printChunk(e.stdout, ch)
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil // Ctrl-C: the follow ends
			}
			return b.nameFlag(err)
		}
		if cf.json {
			return enc.Encode(end)
		}
		fmt.Fprintf(e.stderr, "[task %d: %s, attempt %d]\n", in.TaskID, end.State, end.Attempt)
		return nil
	}
	return c
}

// printChunk writes a chunk's text as the attempt printed it, a note of
// dropped output as a line saying so.
func printChunk(w io.Writer, ch cks.OutputChunk) {
	if ch.Dropped > 0 {
		fmt.Fprintf(w, "[%d bytes of attempt %d's earliest output dropped]\n", ch.Dropped, ch.Attempt)
		return
	}
	io.WriteString(w, ch.Text) //nolint:errcheck // stdout closed: nothing to tell
}
