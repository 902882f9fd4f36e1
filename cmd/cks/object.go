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
	"unicode/utf8"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/runtime/pipeline"
)

// objectGroup is `cks object`: the knowledge store. `show` prints an
// object's transition log as a readable chain with its reasoning (and, for
// a forked object, its heads side by side), `list` a page of objects,
// `edit` writes a version, `versions` lists the version DAG.
var objectGroup = group{name: "object", commands: []command{
	opCommand("show", ops.GetObject, opSpec[cks.ObjectInput, cks.ObjectView]{
		summary: "an object's transition log as a chain, with its reasoning, claims and synthesis; a forked object's heads side by side",
		table: func(x *reply[cks.ObjectInput, cks.ObjectView]) error {
			printObject(x.w, x.out)
			return nil
		},
	}),
	opCommand("list", ops.ListObjects, opSpec[cks.ListObjectsInput, cks.ObjectPage]{
		table: func(x *reply[cks.ListObjectsInput, cks.ObjectPage]) error { return printObjects(x.w, x.out) },
	}),
	{name: "edit", args: "ID", op: ops.WriteObjectVersionOp, in: editInput, run: cmdObjectEdit,
		summary: "write a version of an object from a base version (--content JSON, or --set FIELD=VALUE… on the base's content); " +
			"two edits from one base make a fork"},
	opCommand("versions", ops.ListObjectVersionsOp, opSpec[cks.ObjectInput, cks.VersionList]{
		table: func(x *reply[cks.ObjectInput, cks.VersionList]) error { return printVersions(x.w, x.out) },
	}),
}}

// fieldSets is a repeatable FIELD=VALUE flag; unlike stringList it does
// not split on commas (a value may hold them).
type fieldSets []string

func (l *fieldSets) String() string { return strings.Join(*l, " ") }

func (l *fieldSets) Set(v string) error {
	field, _, ok := strings.Cut(v, "=")
	if !ok || strings.TrimSpace(field) == "" {
		return fmt.Errorf("expected FIELD=VALUE, got %q", v)
	}
	// JSON text is UTF-8: encoding would silently replace the bad bytes
	// (a field named "\xff" would be written as "\ufffd").
	if !utf8.ValidString(v) {
		return fmt.Errorf("expected FIELD=VALUE in UTF-8, got %q", v)
	}
	*l = append(*l, v)
	return nil
}

// editInput is how `object edit` reads write_object_version's input.
var editInput = inputSpec{names: map[string]string{"base_version": "base"}, optional: []string{"base_version", "content"}}

// cmdObjectEdit is `cks object edit ID [--base VERSION] (--content JSON |
// --set FIELD=VALUE…)`: write_object_version based on the given version
// (default the object's latest), its content given whole or made of the
// base version's with fields set. Two edits from the same base make a fork.
func cmdObjectEdit(ctx context.Context, full string, args []string, e env) error {
	fset := flagSet(full, e)
	var cf clientFlags
	cf.register(fset)
	b := bindInput(fset, ops.WriteObjectVersionOp, editInput)
	var sets fieldSets
	fset.Var(&sets, "set", "`FIELD=VALUE`: set one top-level field of the base version's content (repeatable); VALUE is read as "+
		"JSON when it parses (5, true, [\"a\"], {\"k\":1}, \"quoted\"), else as a string")
	fset.Usage = func() { commandHelp(fset, full, b.metas(), ops.WriteObjectVersionOp.Spec().Description) }
	pos, err := parse(fset, args)
	if err != nil {
		return err
	}
	v, err := b.input(pos)
	if err != nil {
		return err
	}
	in := v.(*cks.WriteVersionInput)
	switch {
	case len(in.Content) > 0 && len(sets) > 0:
		return fmt.Errorf("%w: object edit takes --content or --set, not both", errUsage)
	case len(in.Content) == 0 && len(sets) == 0:
		return fmt.Errorf("%w: object edit needs --content JSON or at least one --set FIELD=VALUE", errUsage)
	}
	c, err := cf.client(e)
	if err != nil {
		return err
	}
	if err := editBase(ctx, c, in, b.given("base_version"), sets); err != nil {
		return err
	}
	var ver cks.Version
	if err := c.Call(ctx, ops.WriteObjectVersionOp, in, &ver); err != nil {
		return b.nameFlag(err)
	}
	if cf.json {
		return printJSON(e.stdout, ver)
	}
	return printEdit(ctx, c, e.stdout, in, ver)
}

// editBase completes an edit's input: its base, when --base was not given,
// the object's latest version, and its content, with --set, the base
// version's with the fields set.
func editBase(ctx context.Context, c *client.Client, in *cks.WriteVersionInput, baseGiven bool, sets fieldSets) error {
	if !baseGiven {
		v, err := c.GetObject(ctx, in.ObjectID)
		if err != nil {
			return err
		}
		if v.HeadVersion == 0 {
			return fmt.Errorf("object %d has no versions to base an edit on; name one with --base", in.ObjectID)
		}
		in.BaseVersion = v.HeadVersion
	}
	if len(sets) == 0 {
		return nil
	}
	l, err := c.ObjectVersions(ctx, in.ObjectID)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(l.Versions, func(v cks.Version) bool { return v.Version == in.BaseVersion })
	if i < 0 {
		return fmt.Errorf("--base: object %d has no version %d (its versions: %s)", in.ObjectID, in.BaseVersion, versionNumbers(l.Versions))
	}
	in.Content, err = applySets(l.Versions[i].Content, sets)
	return err
}

// printEdit says which version an edit wrote and what the object's heads
// are now.
func printEdit(ctx context.Context, c *client.Client, w io.Writer, in *cks.WriteVersionInput, ver cks.Version) error {
	fmt.Fprintf(w, "object %d: wrote v%d (based on v%d) as %s\n", in.ObjectID, ver.Version, in.BaseVersion, or(ver.Author, "?"))
	v, err := c.GetObject(ctx, in.ObjectID)
	if err != nil {
		return err
	}
	if v.Forked {
		fmt.Fprintln(w, forkLine(v.Heads))
	} else {
		fmt.Fprintf(w, "v%d is the only head\n", ver.Version)
	}
	return nil
}

// applySets sets FIELD=VALUE pairs on a JSON object.
func applySets(content json.RawMessage, sets []string) (json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if len(content) > 0 {
		if err := json.Unmarshal(content, &m); err != nil || m == nil {
			return nil, fmt.Errorf("the base version's content is not a JSON object; use --content")
		}
	}
	for _, s := range sets {
		field, val, _ := strings.Cut(s, "=")
		field = strings.TrimSpace(field)
		if json.Valid([]byte(val)) && strings.TrimSpace(val) != "" {
			m[field] = json.RawMessage(val)
		} else {
			b, _ := json.Marshal(val)
			m[field] = b
		}
	}
	return json.Marshal(m)
}

func versionNumbers(vs []cks.Version) string {
	if len(vs) == 0 {
		return "none"
	}
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprintf("v%d", v.Version)
	}
	return strings.Join(parts, ", ")
}

// forkLine is the prominent mark of a forked object.
func forkLine(heads []cks.Version) string {
	return fmt.Sprintf("FORKED: %d heads (%s) — fork_detection will enqueue a resolve_fork task", len(heads), versionNumbers(heads))
}

// printVersions prints the version DAG: one line per version with its
// parents, author, time and hash prefix, heads marked.
func printVersions(w io.Writer, l cks.VersionList) error {
	if len(l.Versions) == 0 {
		fmt.Fprintf(w, "object %d has no versions\n", l.ObjectID)
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tPARENTS\tAUTHOR\tCREATED\tHASH\tHEAD")
	for _, v := range l.Versions {
		parents := "-"
		if len(v.Parents) > 0 {
			ps := make([]string, len(v.Parents))
			for i, p := range v.Parents {
				ps[i] = fmt.Sprintf("v%d", p)
			}
			parents = strings.Join(ps, ",")
		}
		head := ""
		if slices.Contains(l.Heads, v.Version) {
			head = "head"
		}
		fmt.Fprintf(tw, "v%d\t%s\t%s\t%s\t%s\t%s\n", v.Version, parents, or(v.Author, "?"),
			v.CreatedAt.Local().Format("2006-01-02 15:04:05.000"), hashPrefix(v.ContentHash), head)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	heads := make([]string, len(l.Heads))
	for i, h := range l.Heads {
		heads[i] = fmt.Sprintf("v%d", h)
	}
	if l.Forked {
		fmt.Fprintf(w, "FORKED: %d heads (%s) — fork_detection will enqueue a resolve_fork task\n", len(l.Heads), strings.Join(heads, ", "))
	} else {
		fmt.Fprintf(w, "head: %s\n", strings.Join(heads, ", "))
	}
	return nil
}

// hashPrefix is the first 12 hex digits of a content hash (any
// "algorithm:" prefix dropped).
func hashPrefix(h string) string {
	if _, after, ok := strings.Cut(h, ":"); ok {
		h = after
	}
	if len(h) > 12 {
		h = h[:12]
	}
	return or(h, "-")
}

// printHeads prints a forked object's heads side by side: one row per
// top-level field whose value differs between heads, one column per head,
// then the fields equal in all heads once each.
func printHeads(w io.Writer, heads []cks.Version) {
	fmt.Fprintln(w, forkLine(heads))
	contents := make([]map[string]json.RawMessage, len(heads))
	var fields []string
	for i, h := range heads {
		contents[i] = map[string]json.RawMessage{}
		_ = json.Unmarshal(h.Content, &contents[i])
		for f := range contents[i] {
			if !slices.Contains(fields, f) {
				fields = append(fields, f)
			}
		}
	}
	slices.Sort(fields)
	var differ, same []string
	for _, f := range fields {
		first := compactValue(contents[0], f)
		equal := true
		for _, c := range contents[1:] {
			equal = equal && compactValue(c, f) == first
		}
		if equal {
			same = append(same, f)
		} else {
			differ = append(differ, f)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	if len(differ) > 0 {
		fmt.Fprintln(w, "\nHeads side by side (fields that differ):")
		row := []string{"  FIELD"}
		for _, h := range heads {
			row = append(row, fmt.Sprintf("v%d by %s at %s", h.Version, or(h.Author, "?"), h.CreatedAt.Local().Format("15:04:05.000")))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
		for _, f := range differ {
			row := []string{"  " + f}
			for _, c := range contents {
				row = append(row, clip(compactValue(c, f), 60))
			}
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		_ = tw.Flush()
	} else {
		fmt.Fprintln(w, "\nThe heads' contents are equal.")
	}
	if len(same) > 0 {
		fmt.Fprintln(w, "Same in all heads:")
		for _, f := range same {
			fmt.Fprintf(tw, "  %s\t%s\n", f, clip(compactValue(contents[0], f), 100))
		}
		_ = tw.Flush()
	}
}

// compactValue is field f of content as compact JSON (object keys
// sorted), or "(absent)".
func compactValue(content map[string]json.RawMessage, f string) string {
	raw, ok := content[f]
	if !ok {
		return "(absent)"
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return string(raw)
	}
	return string(b)
}

func printObjects(w io.Writer, page cks.ObjectPage) error {
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
func printObject(w io.Writer, v cks.ObjectView) {
	printObjectHead(w, v)
	shown := map[int64]bool{} // the linked objects printed
	printObjectLog(w, v, shown)
	printClaims(w, v, shown)
	printSyntheses(w, v, shown)
	var other []cks.Object
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

// printObjectHead prints an object's header line and its content: a
// question's text, a forked object's heads side by side, else the JSON.
func printObjectHead(w io.Writer, v cks.ObjectView) {
	head := ""
	if v.HeadVersion > 0 && !v.Forked {
		head = fmt.Sprintf(" · version v%d", v.HeadVersion)
	}
	fmt.Fprintf(w, "%s %d · %s · round %d · created by %s at %s%s\n", v.Kind, v.ID, or(v.Status, "no status"), v.Round,
		or(v.CreatedBy, "?"), v.CreatedAt.Local().Format("2006-01-02 15:04:05"), head)
	switch {
	case v.Forked && len(v.Heads) > 1:
		printHeads(w, v.Heads)
	case v.Kind == cks.KindQuestion:
		var q pipeline.Question
		_ = json.Unmarshal(v.Content, &q)
		fmt.Fprintf(w, "  %s\n", q.Question)
		if q.Corpus != "" {
			fmt.Fprintf(w, "  corpus: %s\n", q.Corpus)
		}
	default:
		printContent(w, v.Object, "  ")
	}
}

// printObjectLog prints the transition log, each entry with the reasoning
// it attached (marked in shown) or what it did.
func printObjectLog(w io.Writer, v cks.ObjectView, shown map[int64]bool) {
	for _, e := range v.Log {
		if e.ReasoningNodeID != nil {
			shown[*e.ReasoningNodeID] = true
		}
	}
	if len(v.Log) == 0 {
		return
	}
	fmt.Fprintln(w, "\nTransition log:")
	for _, e := range v.Log {
		line := fmt.Sprintf("  %s  %s: %s → %s", e.TS.Local().Format("15:04:05.000"), e.Agent, e.Action, e.TransitionedTo)
		if e.Round > 0 {
			line += fmt.Sprintf("  [round %d]", e.Round)
		}
		fmt.Fprintln(w, line)
		node, ok := reasoningNode(e, v)
		if !ok {
			if d := entryDetail(e, v); d != "" {
				fmt.Fprintf(w, "      %s\n", d)
			}
			continue
		}
		printReasoning(w, node, "      ")
		// Further reasoning the same transition attached (a parking
		// rationale comes with the rejection that led to it).
		for _, o := range v.Reasoning {
			if !shown[o.ID] && o.ID != node.ID && o.CreatedAt.Equal(node.CreatedAt) && isReasoning(o.Kind) {
				shown[o.ID] = true
				printReasoning(w, o, "      ")
			}
		}
	}
}

// printClaims prints the linked claims with their status and citations.
func printClaims(w io.Writer, v cks.ObjectView, shown map[int64]bool) {
	claims := linkedOf(v, cks.KindClaim)
	if len(claims) == 0 {
		return
	}
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

// printSyntheses prints the linked syntheses, each with the rationale that
// validated or rejected it.
func printSyntheses(w io.Writer, v cks.ObjectView, shown map[int64]bool) {
	for _, s := range linkedOf(v, cks.KindSynthesis) {
		shown[s.ID] = true
		var sc pipeline.SynthesisContent
		_ = json.Unmarshal(s.Content, &sc)
		verdict := ""
		for _, r := range v.Reasoning {
			var rr pipeline.Reasoning
			if r.Kind == cks.KindRationale && json.Unmarshal(r.Content, &rr) == nil && rr.SynthesisID == s.ID {
				if slices.ContainsFunc(r.Edges, func(e cks.Edge) bool { return e.Dst == v.ID && e.SemanticType == cks.SemResolves }) {
					verdict = ", validated by rationale #" + fmt.Sprint(r.ID)
				} else {
					verdict = ", rejected by rationale #" + fmt.Sprint(r.ID)
				}
			}
		}
		fmt.Fprintf(w, "\nSynthesis #%d (model %s, from claims %s%s):\n", s.ID, or(sc.Model, "?"), idList(sc.ClaimIDs), verdict)
		printSynthesis(w, sc, "  ")
	}
}

// printReasoning prints a reasoning node under a log entry: its text, a
// critique's verdict per claim, an unusable reply's error and raw text.
func printReasoning(w io.Writer, node cks.Object, indent string) {
	switch node.Kind {
	case cks.KindModelReply:
		var m struct {
			Raw, Error, Model string
		}
		_ = json.Unmarshal(node.Content, &m)
		fmt.Fprintf(w, "%smodel_reply #%d: %s\n%s  raw reply: %s\n", indent, node.ID, m.Error, indent, clip(m.Raw, 300))
		return
	case cks.KindCritique, cks.KindRationale:
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
func printContent(w io.Writer, o cks.Object, indent string) {
	var v any
	if json.Unmarshal(o.Content, &v) != nil {
		return
	}
	b, _ := json.MarshalIndent(v, indent, "  ")
	fmt.Fprintf(w, "%s%s\n", indent, b)
}

// linkTo names the edges between the viewed object and linked object id.
func linkTo(v cks.ObjectView, id int64) string {
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
	return kind == cks.KindCritique || kind == cks.KindRationale || kind == cks.KindModelReply
}
