package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
)

// cmdSession manages the studio's sessions: list, revoke. Each needs admin
// on /.
func cmdSession(ctx context.Context, args []string, e env) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: session needs a subcommand: list or revoke ID", errUsage)
	}
	sub, args := args[0], args[1:]
	fs := flagSet("session "+sub, e)
	var cf clientFlags
	cf.register(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	switch sub {
	case "list":
		if len(pos) > 0 {
			return fmt.Errorf("%w: session list takes no arguments, got %q", errUsage, pos)
		}
		cl, err := cf.client(e)
		if err != nil {
			return err
		}
		ss, err := cl.ListSessions(ctx)
		if err != nil {
			return err
		}
		if ss == nil {
			ss = []cks.Session{}
		}
		if cf.json {
			return printJSON(e.stdout, cks.SessionList{Sessions: ss})
		}
		printSessions(e.stdout, ss)
		return nil
	case "revoke":
		return revokeByID(ctx, e, cf, pos, "session", (*client.Client).RevokeSession)
	default:
		return fmt.Errorf("%w: unknown session subcommand %q; expected list or revoke", errUsage, sub)
	}
}

func printSessions(w io.Writer, ss []cks.Session) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPRINCIPAL\tNAME\tCREATED\tEXPIRES")
	for _, s := range ss {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.ID, s.PrincipalID, s.PrincipalName,
			s.CreatedAt.Local().Format(time.DateTime), s.ExpiresAt.Local().Format(time.DateTime))
	}
	tw.Flush()
}

// revokeByID is `cks token|session revoke ID`: one id, revoked by call,
// answered "revoked ID" (or {"revoked": ID} with --json).
func revokeByID(ctx context.Context, e env, cf clientFlags, pos []string, noun string,
	call func(*client.Client, context.Context, string) error) error {
	if len(pos) != 1 {
		return fmt.Errorf("%w: %s revoke needs exactly one %s ID (see cks %s list)", errUsage, noun, noun, noun)
	}
	cl, err := cf.client(e)
	if err != nil {
		return err
	}
	if err := call(cl, ctx, pos[0]); err != nil {
		return err
	}
	if cf.json {
		return printJSON(e.stdout, map[string]string{"revoked": pos[0]})
	}
	fmt.Fprintf(e.stdout, "revoked %s\n", pos[0])
	return nil
}
