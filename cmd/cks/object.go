package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cks-dev/cks/api"
	"github.com/cks-dev/cks/pipeline"
	"github.com/cks-dev/cks/store"
)

const objectSubcommands = "show or list"

// cmdObject reads the knowledge store: `cks object show ID` prints an
// object's transition log as a readable chain with its reasoning, `cks
// object list` a page of objects.
func cmdObject(ctx context.Context, args []string, e env) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: object needs a subcommand: %s", errUsage, objectSubcommands)
	}
	sub, args := args[0], args[1:]
	fset := flagSet("object "+sub, e)
	var cf clientFlags
	cf.register(fset)
	switch sub {
	case "show":
		pos, err := parse(fset, args)
		if err != nil {
			return err
		}
		if len(pos) != 1 {
			return fmt.Errorf("%w: object show needs exactly one object ID", errUsage)
		}
		id, err := parseObjectID(pos[0])
		if err != nil {
			return err
		}
		c, err := cf.client(e)
		if err != nil {
			return err
		}
		v, err := c.GetObject(ctx, id)
		if err != nil {
			return err
		}
		if cf.json {
			return printJSON(e.stdout, v)
		}
		printObject(e.stdout, v)
		return nil
	case "list":
		var statuses, kinds stringList
		fset.Var(&statuses, "status", "only objects in this status (repeatable or comma-separated)")
		fset.Var(&kinds, "kind", "only objects of this kind: question, claim, synthesis, critique, rationale, model_reply (repeatable or comma-separated)")
		cursor := fset.Int64("cursor", 0, "list objects after this object id (the next_cursor of a previous page)")
		limit := fset.Int("limit", 0, "page size (default 100, at most 1000)")
		if err := noArgs(fset, args); err != nil {
			return err
		}
		c, err := cf.client(e)
		if err != nil {
			return err
		}
		page, err := c.ListObjects(ctx, store.ObjectFilter{Statuses: statuses, Kinds: kinds, After: *cursor, Limit: *limit})
		if err != nil {
			return err
		}
		if cf.json {
			return printJSON(e.stdout, page)
		}
		return printObjects(e.stdout, page)
	default:
		return fmt.Errorf("%w: unknown object subcommand %q; expected %s", errUsage, sub, objectSubcommands)
	}
}

func parseObjectID(s string) (int64, error) {
	id, err := parseID(s)
	if err != nil {
		return 0, fmt.Errorf("%w: expected an object ID (a positive integer), got %q", errUsage, s)
	}
	return id, nil
}

func printObjects(w io.Writer, page store.ObjectPage) error {
	if len(page.Objects) == 0 {
		fmt.Fprintln(w, "no objects")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKIND\tSTATUS\tROUND\tUPDATED\tTITLE")
	for _, o := range page.Objects {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\n", o.ID, o.Kind, or(o.Status, "-"), o.Round,
			o.UpdatedAt.Local().Format(time.DateTime), clip(o.Title, 70))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if page.Next != 0 {
		fmt.Fprintf(w, "more: --cursor %d\n", page.Next)
	}
	return nil
}

// printObject prints v as a readable chain: a header, the transition log
// with each entry's reasoning indented under it, then the claims with their
// status and citations, the syntheses, and any other linked objects.
func printObject(w io.Writer, v api.ObjectView) {
	fmt.Fprintf(w, "%s %d · %s · round %d · created by %s at %s\n", v.Kind, v.ID, or(v.Status, "no status"), v.Round,
		or(v.CreatedBy, "?"), v.CreatedAt.Local().Format("2006-01-02 15:04:05"))
	switch v.Kind {
	case pipeline.KindQuestion:
		var q pipeline.Question
		_ = json.Unmarshal(v.Content, &q)
		fmt.Fprintf(w, "  %s\n", q.Question)
		if q.Corpus != "" {
			fmt.Fprintf(w, "  corpus: %s\n", q.Corpus)
		}
	default:
		printContent(w, v.Object, "  ")
	}

	shown := map[int64]bool{}
	for _, e := range v.Log {
		if e.ReasoningNodeID != nil {
			shown[*e.ReasoningNodeID] = true
		}
	}
	if len(v.Log) > 0 {
		fmt.Fprintln(w, "\nTransition log:")
		for _, e := range v.Log {
			line := fmt.Sprintf("  %s  %s: %s → %s", e.TS.Local().Format("15:04:05.000"), e.Agent, e.Action, e.TransitionedTo)
			if e.Round > 0 {
				line += fmt.Sprintf("  [round %d]", e.Round)
			}
			fmt.Fprintln(w, line)
			if node, ok := reasoningNode(e, v); ok {
				printReasoning(w, node, "      ")
				// Further reasoning the same transition attached (a parking
				// rationale comes with the rejection that led to it).
				for _, o := range v.Reasoning {
					if !shown[o.ID] && o.ID != node.ID && o.CreatedAt.Equal(node.CreatedAt) && isReasoning(o.Kind) {
						shown[o.ID] = true
						printReasoning(w, o, "      ")
					}
				}
			} else if d := entryDetail(e, v); d != "" {
				fmt.Fprintf(w, "      %s\n", d)
			}
		}
	}

	if claims := linkedOf(v, pipeline.KindClaim); len(claims) > 0 {
		fmt.Fprintln(w, "\nClaims:")
		for _, c := range claims {
			shown[c.ID] = true
			var cc pipeline.ClaimContent
			_ = json.Unmarshal(c.Content, &cc)
			fmt.Fprintf(w, "  #%d %s (round %d): %s\n", c.ID, or(c.Status, "-"), cc.Round, cc.Text)
			for _, cit := range cc.Citations {
				fmt.Fprintf(w, "      cites %s\n", sourceLabel(cit))
			}
		}
	}
	for _, s := range linkedOf(v, pipeline.KindSynthesis) {
		shown[s.ID] = true
		var sc pipeline.SynthesisContent
		_ = json.Unmarshal(s.Content, &sc)
		verdict := ""
		for _, r := range v.Reasoning {
			var rr pipeline.Reasoning
			if r.Kind == pipeline.KindRationale && json.Unmarshal(r.Content, &rr) == nil && rr.SynthesisID == s.ID {
				if slices.ContainsFunc(r.Edges, func(e store.Edge) bool { return e.Dst == v.ID && e.SemanticType == pipeline.SemResolves }) {
					verdict = ", validated by rationale #" + fmt.Sprint(r.ID)
				} else {
					verdict = ", rejected by rationale #" + fmt.Sprint(r.ID)
				}
			}
		}
		fmt.Fprintf(w, "\nSynthesis #%d (model %s, from claims %s%s):\n", s.ID, or(sc.Model, "?"), idList(sc.ClaimIDs), verdict)
		printSynthesis(w, sc, "  ")
	}
	var other []store.Object
	for _, o := range v.Reasoning {
		if !shown[o.ID] {
			other = append(other, o)
		}
	}
	if len(other) > 0 {
		fmt.Fprintln(w, "\nLinked objects:")
		for _, o := range other {
			fmt.Fprintf(w, "  #%d %s%s: %s%s\n", o.ID, o.Kind, statusSuffix(o.Status), clip(o.Title, 100), linkTo(v, o.ID))
		}
	}
}

// printReasoning prints a reasoning node under a log entry: its text, a
// critique's verdict per claim, an unusable reply's error and raw text.
func printReasoning(w io.Writer, node store.Object, indent string) {
	switch node.Kind {
	case pipeline.KindModelReply:
		var m struct {
			Raw, Error, Model string
		}
		_ = json.Unmarshal(node.Content, &m)
		fmt.Fprintf(w, "%smodel_reply #%d: %s\n%s  raw reply: %s\n", indent, node.ID, m.Error, indent, clip(m.Raw, 300))
		return
	case pipeline.KindCritique, pipeline.KindRationale:
	default:
		fmt.Fprintf(w, "%s%s #%d: %s\n", indent, node.Kind, node.ID, clip(node.Title, 200))
		return
	}
	var r pipeline.Reasoning
	_ = json.Unmarshal(node.Content, &r)
	fmt.Fprintf(w, "%s%s #%d: %s\n", indent, node.Kind, node.ID, r.Text)
	for _, vd := range r.Verdicts {
		verdict := "rejected"
		if vd.Accept {
			verdict = "accepted"
		}
		fmt.Fprintf(w, "%s  %s claim #%d: %s\n", indent, verdict, vd.ClaimID, vd.Reason)
	}
	if r.SendBackTo != "" {
		fmt.Fprintf(w, "%s  sent back to: %s\n", indent, r.SendBackTo)
	}
}

// printContent prints an object's content as indented JSON.
func printContent(w io.Writer, o store.Object, indent string) {
	var v any
	if json.Unmarshal(o.Content, &v) != nil {
		return
	}
	b, _ := json.MarshalIndent(v, indent, "  ")
	fmt.Fprintf(w, "%s%s\n", indent, b)
}

// linkTo names the edges between the viewed object and linked object id.
func linkTo(v api.ObjectView, id int64) string {
	var parts []string
	for _, e := range v.Edges {
		switch {
		case e.Src == id && e.Dst == v.ID:
			parts = append(parts, "→ "+or(e.SemanticType, e.BaseType))
		case e.Src == v.ID && e.Dst == id:
			parts = append(parts, "← "+or(e.SemanticType, e.BaseType))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "  (" + strings.Join(parts, ", ") + ")"
}

func statusSuffix(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

func idList(ids []int64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("#%d", id)
	}
	return strings.Join(parts, ", ")
}

func isReasoning(kind string) bool {
	return kind == pipeline.KindCritique || kind == pipeline.KindRationale || kind == pipeline.KindModelReply
}
