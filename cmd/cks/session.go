package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/ops"
)

// sessionGroup is `cks session`: the studio's sessions (admin on /).
var sessionGroup = group{name: "session", commands: []command{
	opCommand("list", ops.ListSessions, opSpec[cks.ListSessionsInput, cks.SessionList]{
		table: func(x *reply[cks.ListSessionsInput, cks.SessionList]) error {
			printSessions(x.w, x.out.Sessions)
			if x.out.Next != "" {
				fmt.Fprintf(x.w, "%d sessions in all; more: --cursor %s\n", x.out.Total, x.out.Next)
			}
			return nil
		},
	}),
	revokeCommand(ops.RevokeSession, func(in *cks.SessionInput) string { return in.ID }),
}}

func printSessions(w io.Writer, ss []cks.Session) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPRINCIPAL\tNAME\tCREATED\tEXPIRES")
	for _, s := range ss {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.ID, s.PrincipalID, s.PrincipalName,
			s.CreatedAt.Local().Format(time.DateTime), s.ExpiresAt.Local().Format(time.DateTime))
	}
	tw.Flush()
}

// revokeCommand is `cks token|session revoke ID`, answered "revoked ID" (or
// {"revoked": ID} with --json).
func revokeCommand[In any](op *ops.Op[In, struct{}], id func(*In) string) command {
	return opCommand("revoke", op, opSpec[In, struct{}]{
		json: func(in *In, _ struct{}) any { return map[string]string{"revoked": id(in)} },
		table: func(x *reply[In, struct{}]) error {
			_, err := fmt.Fprintf(x.w, "revoked %s\n", id(x.in))
			return err
		},
	})
}
