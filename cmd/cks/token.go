package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/ops"
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

func (g *grantFlags) value() (any, error) { return []cks.Grant(*g), nil }
func (g *grantFlags) meta() string        { return "PERMISSION:RESOURCE" }
func (g *grantFlags) repeats()            {}

// tokenGroup is `cks token`: bearer tokens and their grants (admin on /).
var tokenGroup = group{name: "token", commands: []command{
	opCommand("create", ops.CreateToken, opSpec[cks.CreateTokenInput, cks.CreatedToken]{
		in: inputSpec{names: map[string]string{"grants": "grant", "task_id": "task"},
			values: map[string]func() fieldValue{"grants": func() fieldValue { return new(grantFlags) }}},
		table: func(x *reply[cks.CreateTokenInput, cks.CreatedToken]) error {
			fmt.Fprintf(x.w, "%s\n\nThe token above is shown only this once; the hub stores only its hash.\n", x.out.Token)
			printTokens(x.w, []cks.PrincipalGrants{x.out.PrincipalGrants})
			return nil
		},
	}),
	opCommand("list", ops.ListTokens, opSpec[struct{}, cks.TokenList]{
		table: func(x *reply[struct{}, cks.TokenList]) error {
			printTokens(x.w, x.out.Tokens)
			return nil
		},
	}),
	revokeCommand(ops.RevokeToken, func(in *cks.TokenInput) string { return in.ID }),
}}

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
