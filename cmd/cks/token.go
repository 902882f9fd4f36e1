package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/auth"
	"github.com/cks-dev/cks/client"
)

// grantFlags collects repeated --grant PERMISSION:RESOURCE flags.
type grantFlags []cks.Grant

func (g *grantFlags) String() string { return fmt.Sprint([]cks.Grant(*g)) }

// Set reads PERMISSION:RESOURCE; whether the permission and the resource
// exist is the hub's to say (create_token refuses them naming the field).
func (g *grantFlags) Set(s string) error {
	perm, res, ok := strings.Cut(s, ":")
	if !ok {
		return fmt.Errorf("expected PERMISSION:RESOURCE such as read:/tasks, got %q", s)
	}
	*g = append(*g, cks.Grant{Permission: perm, Resource: res})
	return nil
}

// cmdToken manages bearer tokens: create, list, revoke. Each needs admin on /.
func cmdToken(ctx context.Context, args []string, e env) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: token needs a subcommand: create, list or revoke ID", errUsage)
	}
	sub, args := args[0], args[1:]
	fs := flagSet("token "+sub, e)
	var cf clientFlags
	cf.register(fs)
	var (
		grants grantFlags
		name   *string
		task   *int64
	)
	if sub == "create" {
		name = fs.String("name", "", `name of the token's principal (default "task/ID" with --task, else required)`)
		task = fs.Int64("task", 0, "make a task-scoped agent credential: read, append, create on /tasks/ID")
		fs.Var(&grants, "grant", "PERMISSION:RESOURCE to grant, e.g. read:/tasks or control:/sweepers/lease_reaper (repeatable); permissions: "+
			strings.Join(auth.Permissions, ", "))
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	switch sub {
	case "create":
		if len(pos) > 0 {
			return fmt.Errorf("%w: token create takes no arguments, got %q", errUsage, pos)
		}
		cl, err := cf.client(e)
		if err != nil {
			return err
		}
		created, err := cl.CreateToken(ctx, cks.CreateTokenInput{Name: *name, Grants: grants, TaskID: *task})
		if err != nil {
			return err
		}
		if cf.json {
			return printJSON(e.stdout, created)
		}
		fmt.Fprintf(e.stdout, "%s\n\nThe token above is shown only this once; the hub stores only its hash.\n", created.Token)
		printTokens(e.stdout, []cks.PrincipalGrants{created.PrincipalGrants})
		return nil
	case "list":
		if len(pos) > 0 {
			return fmt.Errorf("%w: token list takes no arguments, got %q", errUsage, pos)
		}
		cl, err := cf.client(e)
		if err != nil {
			return err
		}
		ps, err := cl.ListTokens(ctx)
		if err != nil {
			return err
		}
		if cf.json {
			if ps == nil {
				ps = []cks.PrincipalGrants{}
			}
			return printJSON(e.stdout, cks.TokenList{Tokens: ps})
		}
		printTokens(e.stdout, ps)
		return nil
	case "revoke":
		return revokeByID(ctx, e, cf, pos, "token", (*client.Client).RevokeToken)
	default:
		return fmt.Errorf("%w: unknown token subcommand %q; expected create, list or revoke", errUsage, sub)
	}
}

func printTokens(w io.Writer, ps []cks.PrincipalGrants) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tCREATED\tGRANTS")
	for _, p := range ps {
		gs := make([]string, 0, len(p.Grants))
		for _, g := range p.Grants {
			gs = append(gs, g.Permission+":"+g.Resource)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.ID, p.Name, p.CreatedAt.Local().Format(time.DateTime), strings.Join(gs, " "))
	}
	tw.Flush()
}
