package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/cks-dev/cks/internal/ops"
)

// cmdAPI is `cks api OP [JSON]`: it calls any operation of the table by
// name with JSON as its input (default {}; "-" reads it from stdin) and
// prints the output as JSON. The input is sent as it is, so every refusal
// is the hub's, in its words. `cks api --list` lists the operations.
func cmdAPI(ctx context.Context, args []string, e env) error {
	fs := flagSet("api", e)
	var cf clientFlags
	cf.register(fs)
	list := fs.Bool("list", false, "list the operations: name, route, permission and resource")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if *list {
		if len(pos) > 0 {
			return fmt.Errorf("%w: api --list takes no arguments, got %q", errUsage, pos)
		}
		return printOps(e.stdout)
	}
	if len(pos) < 1 || len(pos) > 2 {
		return fmt.Errorf("%w: api needs an operation name and at most one JSON input (see cks api --list)", errUsage)
	}
	op, ok := ops.Lookup(pos[0])
	switch {
	case !ok:
		return fmt.Errorf("%w: api: no operation %q; one of %s", errUsage, pos[0], strings.Join(ops.Names(ops.All()), ", "))
	case op.Spec().Surfaces&ops.HTTP == 0:
		return fmt.Errorf("%w: api: operation %s is not offered over HTTP", errUsage, pos[0])
	case op.Spec().Stream && op != ops.OpenAPIDocument:
		return fmt.Errorf("%w: api: %s is a stream (%s %s); read it with an HTTP client", errUsage, pos[0], op.Spec().Method, op.Spec().Path)
	}
	input := []byte("{}")
	if len(pos) == 2 {
		if input = []byte(pos[1]); pos[1] == "-" {
			if input, err = io.ReadAll(e.stdin); err != nil {
				return fmt.Errorf("api: read the input: %w", err)
			}
		}
	}
	if !json.Valid(input) {
		return fmt.Errorf("%w: api: the input is not JSON: %s", errUsage, clip(string(input), 60))
	}
	c, err := cf.client(e)
	if err != nil {
		return err
	}
	var out json.RawMessage
	if err := c.Call(ctx, op, json.RawMessage(input), &out); err != nil {
		return err
	}
	if len(bytes.TrimSpace(out)) == 0 {
		return nil // 204: nothing to print
	}
	var buf bytes.Buffer
	if json.Indent(&buf, out, "", "  ") != nil {
		_, err := e.stdout.Write(out)
		return err
	}
	buf.WriteByte('\n')
	_, err = buf.WriteTo(e.stdout)
	return err
}

// printOps lists the operations of the table.
func printOps(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OPERATION\tROUTE\tNEEDS\tMCP")
	for _, op := range ops.All() {
		sp := op.Spec()
		route := "-"
		if sp.Surfaces&ops.HTTP != 0 {
			route = sp.Method + " " + sp.Path
		}
		mcp := ""
		if sp.Surfaces&ops.MCP != 0 {
			mcp = "tool"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s on %s\t%s\n", sp.Name, route, sp.Permission, sp.Resource, mcp)
	}
	return tw.Flush()
}
