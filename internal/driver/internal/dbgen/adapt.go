package main

// adapt writes a driver's executor_gen.go: the mapping between package
// driver's rows and params and the dialect's dbsqlc types, written once here
// instead of once per driver, and every primitive whose query maps onto it
// one to one. It reads, as source (go/ast, no type checking):
//
//   - internal/driver/driver.go: the rows, the params and the executor interfaces;
//   - the driver's dbsqlc (queries_gen.go, as emitQueries renders it with
//     every method): its models, params and queries;
//   - the driver's hand-written files: a primitive written there (because
//     its dialect has a reason: a lock chooses the query, a bulk form sends
//     arrays, …) is not generated.
//
// Fields pair by name (case and underscores aside; a row's ID is its table's key);
// values convert by the table of their dialect (source.conv): a type pair
// missing from it, or a query field nothing supplies, leaves the primitive
// to be written by hand, which the compiler then asks for.

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/cks-dev/cks/internal/driver/schema"
)

// genFile is the file adapt writes in a driver's directory.
const genFile = "executor_gen.go"

// rowOf names the driver row each dbsqlc model (or query row) is read into.
// A new table's model is added here.
var rowOf = map[string]string{
	"CksOutboxTask":              "TaskRow",
	"CksTaskEvent":               "TaskEventRow",
	"CksTaskEvidence":            "EvidenceRow",
	"CksTaskDecision":            "DecisionRow",
	"CksTaskOutput":              "OutputRow",
	"OutputTrimRow":              "OutputTrimmed",
	"OutputHeadsRow":             "OutputHead",
	"CksTaskAbort":               "AbortRow",
	"CksTaskDep":                 "TaskDep",
	"CksObject":                  "ObjectRow",
	"CksObjectVersion":           "VersionRow",
	"CksEdge":                    "EdgeRow",
	"CksTransitionLog":           "TransitionRow",
	"ForkListRow":                "ForkRow",
	"TaskClaimRow":               "TaskRow",
	"TaskCountByStateRow":        "TaskStateCount",
	"TaskEventMinutesRow":        "TaskEventMinute",
	"TaskClaimWaitsRow":          "TaskClaimWait",
	"LivenessCountByKindRow":     "LivenessKindCount",
	"CksAgentLiveness":           "LivenessRow",
	"CksPrincipal":               "PrincipalRow",
	"CksGrant":                   "GrantRow",
	"CksSession":                 "SessionRow",
	"CksSweeperPass":             "SweeperPassRow",
	"CksPausedType":              "PausedTypeRow",
	"CksLimit":                   "LimitRow",
	"KeyStartsSinceRow":          "KeyStartRow",
	"CksSchedule":                "ScheduleRow",
	"CksUsage":                   "UsageRow",
	"CksTaskSpend":               "TaskSpendRow",
	"CksKeySpend":                "KeySpendRow",
	"PrincipalTaskCredentialRow": "TaskCredentialRow",
}

type field struct{ name, typ string }

type fn struct {
	params  []field // after ctx (and, for queries, db)
	results []string
}

// source is what adapt reads.
type source struct {
	dialect   schema.Dialect
	structs   map[string][]field // driver's, flattened
	methods   map[string]fn      // driver's executor interfaces
	order     []string           // methods in declaration order
	models    map[string][]field // dbsqlc's structs
	queries   map[string]fn
	sql       map[string]string // the const of a query's SQL → its SQL
	scans     map[string]scan   // query → how its dbsqlc method reads rows
	written   map[string]bool   // executor methods written by hand
	hand      []byte            // the hand-written files' text
	jsonNames map[string]bool   // normalised names of JSON columns
}

// scan is how dbsqlc's method of a query that returns rows runs it: the
// arguments of its db.Query after ctx (the first is the SQL's const), as
// written, and the destinations of its rows.Scan.
type scan struct{ args, dests []string }

// adapt renders executor_gen.go of the driver in dir.
func adapt(dir string) ([]byte, error) { return adaptSource(dir, nil) }

// adaptSource renders executor_gen.go of the driver in dir, reading the
// queries from queries (a dbsqlc Go file) or, when nil, from the files of
// the driver's internal/dbsqlc.
func adaptSource(dir string, queries []byte) ([]byte, error) {
	d := schema.Dialect(filepath.Base(dir))
	if !slices.Contains(schema.Dialects[:], d) {
		return nil, fmt.Errorf("%s is no driver directory", dir)
	}
	s := &source{dialect: d, structs: map[string][]field{}, methods: map[string]fn{}, models: map[string][]field{},
		queries: map[string]fn{}, sql: map[string]string{}, scans: map[string]scan{}, written: map[string]bool{}, jsonNames: map[string]bool{}}
	for _, t := range schema.Tables() {
		for _, c := range t.Columns {
			if c.Type == schema.JSON {
				s.jsonNames[norm(c.Name)] = true
			}
		}
	}
	if err := s.readDriver(filepath.Join(dir, "..", "driver.go")); err != nil {
		return nil, err
	}
	if queries != nil {
		f, err := parser.ParseFile(token.NewFileSet(), queriesFile, queries, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		s.readQueries(f, queries)
	} else if err := s.readDir(filepath.Join(dir, "internal", "dbsqlc"), s.readQueries); err != nil {
		return nil, err
	}
	if err := s.readDir(dir, s.readWritten); err != nil {
		return nil, err
	}
	return s.render()
}

func (s *source) readDir(dir string, read func(*ast.File, []byte)) error {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return err
	}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") || filepath.Base(name) == genFile {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		read(f, src)
	}
	return nil
}

func (s *source) readDriver(path string) error {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		return err
	}
	ifaces := map[string]*ast.InterfaceType{}
	raw := map[string]*ast.StructType{}
	for _, decl := range f.Decls {
		g, ok := decl.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, spec := range g.Specs {
			ts, ok := spec.(*ast.TypeSpec)
			if !ok {
				continue
			}
			switch t := ts.Type.(type) {
			case *ast.StructType:
				raw[ts.Name.Name] = t
			case *ast.InterfaceType:
				ifaces[ts.Name.Name] = t
			}
		}
	}
	for name := range raw {
		s.structs[name] = flatten(raw, name)
	}
	var walk func(name string)
	walk = func(name string) {
		for _, m := range ifaces[name].Methods.List {
			if id, ok := m.Type.(*ast.Ident); ok {
				walk(id.Name)
				continue
			}
			ft := m.Type.(*ast.FuncType)
			sig := funcOf(ft, 1)
			for i := range sig.params {
				sig.params[i].typ = qualifyDriver(raw, sig.params[i].typ)
				// The generated code's own names (the receiver, results).
				if slices.Contains([]string{"e", "w", "x", "err", "out", "n", "i", "r", "v", "args", "errs"}, sig.params[i].name) {
					sig.params[i].name = "arg"
				}
			}
			for i := range sig.results {
				sig.results[i] = qualifyDriver(raw, sig.results[i])
			}
			s.methods[m.Names[0].Name] = sig
			s.order = append(s.order, m.Names[0].Name)
		}
	}
	walk("Executor")
	return nil
}

// qualifyDriver names package driver's types in typ as from outside it.
func qualifyDriver(raw map[string]*ast.StructType, typ string) string {
	prefix := ""
	for strings.HasPrefix(typ, "[]") || strings.HasPrefix(typ, "*") {
		n := 1
		if typ[0] == '[' {
			n = 2
		}
		prefix, typ = prefix+typ[:n], typ[n:]
	}
	if _, ok := raw[typ]; ok || typ == "Lock" {
		typ = "driver." + typ
	}
	return prefix + typ
}

// flatten lists the fields of driver struct name, those of an embedded
// struct in its place.
func flatten(raw map[string]*ast.StructType, name string) []field {
	var out []field
	for _, f := range raw[name].Fields.List {
		typ := types.ExprString(f.Type)
		if len(f.Names) == 0 {
			out = append(out, flatten(raw, typ)...)
			continue
		}
		for _, n := range f.Names {
			out = append(out, field{n.Name, typ})
		}
	}
	return out
}

// funcOf reads a signature, skipping its first skip parameters.
func funcOf(ft *ast.FuncType, skip int) fn {
	var sig fn
	i := 0
	for _, p := range ft.Params.List {
		typ := types.ExprString(p.Type)
		names := p.Names
		if len(names) == 0 {
			names = []*ast.Ident{{Name: "_"}}
		}
		for _, n := range names {
			if i >= skip {
				sig.params = append(sig.params, field{n.Name, typ})
			}
			i++
		}
	}
	if ft.Results != nil {
		for _, r := range ft.Results.List {
			for range max(1, len(r.Names)) {
				sig.results = append(sig.results, types.ExprString(r.Type))
			}
		}
	}
	return sig
}

func (s *source) readQueries(f *ast.File, _ []byte) {
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch sp := spec.(type) {
				case *ast.TypeSpec:
					if st, ok := sp.Type.(*ast.StructType); ok {
						var fields []field
						for _, fl := range st.Fields.List {
							for _, n := range fl.Names {
								fields = append(fields, field{n.Name, types.ExprString(fl.Type)})
							}
						}
						s.models[sp.Name.Name] = fields
					}
				case *ast.ValueSpec:
					if d.Tok == token.CONST && len(sp.Values) == 1 {
						if lit, ok := sp.Values[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							if text, err := strconv.Unquote(lit.Value); err == nil {
								s.sql[sp.Names[0].Name] = text
							}
						}
					}
				}
			}
		case *ast.FuncDecl:
			if recvType(d) == "*Queries" {
				s.queries[d.Name.Name] = funcOf(d.Type, 2)
				if sc, ok := scanOf(d); ok {
					s.scans[d.Name.Name] = sc
				}
			}
		}
	}
}

// scanOf reads how dbsqlc's method d runs its query and scans its rows: its
// db.Query(ctx, SQL, args...) and its rows.Scan(dests...).
func scanOf(d *ast.FuncDecl) (sc scan, ok bool) {
	var queried, scanned bool
	ast.Inspect(d.Body, func(n ast.Node) bool {
		c, isCall := n.(*ast.CallExpr)
		if !isCall {
			return true
		}
		sel, isSel := c.Fun.(*ast.SelectorExpr)
		if !isSel {
			return true
		}
		x, isIdent := sel.X.(*ast.Ident)
		if !isIdent {
			return true
		}
		switch {
		case x.Name == "db" && sel.Sel.Name == "Query" && len(c.Args) >= 2:
			for _, a := range c.Args[1:] {
				sc.args = append(sc.args, types.ExprString(a))
			}
			queried = true
		case x.Name == "rows" && sel.Sel.Name == "Scan":
			for _, a := range c.Args {
				sc.dests = append(sc.dests, types.ExprString(a))
			}
			scanned = true
		}
		return true
	})
	return sc, queried && scanned
}

func (s *source) readWritten(f *ast.File, src []byte) {
	s.hand = append(s.hand, src...)
	for _, decl := range f.Decls {
		if d, ok := decl.(*ast.FuncDecl); ok && recvType(d) == "*executor" {
			s.written[d.Name.Name] = true
		}
	}
}

func recvType(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) != 1 {
		return ""
	}
	return types.ExprString(d.Recv.List[0].Type)
}

// sqlOf is query q's SQL, its const exported (Postgres, as emitQueries names
// it) or not.
func (s *source) sqlOf(q string) string {
	if text, ok := s.sql[q]; ok {
		return text
	}
	return s.sql[lowerFirst(q)]
}

// isWrite tells whether query q writes (SQLite runs it in a write
// transaction): its statement begins with INSERT, UPDATE, DELETE or
// REPLACE, or is a WITH that holds one.
func (s *source) isWrite(q string) bool {
	text := strings.ToUpper(s.sqlOf(q))
	var words []string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "--") {
			continue
		}
		words = append(words, strings.FieldsFunc(line, func(r rune) bool { return !unicode.IsLetter(r) && r != '_' })...)
	}
	writes := []string{"INSERT", "UPDATE", "DELETE", "REPLACE"}
	if len(words) == 0 {
		return true
	}
	if words[0] == "WITH" {
		for i, w := range words {
			// FOR UPDATE locks; it writes nothing.
			if slices.Contains(writes, w) && (i == 0 || words[i-1] != "FOR") {
				return true
			}
		}
		return false
	}
	return slices.Contains(writes, words[0])
}

// conv is the expression that turns v of type from into type to, in the
// dialect; fallible when it returns (value, error). json marks a []byte
// field of a JSON column (its empty value is the column's default, {}),
// elem an element of a Postgres array parameter (NULL cannot be one: the
// zero time stands for it).
func (s *source) conv(from, to, v string, json, elem bool) (expr string, fallible, ok bool) {
	pg := s.dialect == schema.Postgres
	switch {
	case from == "[]byte" && to == "string" && json:
		return "nullable.JSONText(" + v + ")", false, true
	case from == "[]byte" && to == "[]byte" && json && pg:
		return "[]byte(nullable.JSONText(" + v + "))", false, true
	case from == "time.Time" && to == "time.Time" && pg:
		if elem {
			return "arrayTime(" + v + ")", false, true
		}
		return "driver.Time(" + v + ")", false, true
	case strings.HasPrefix(from, "[]") && from == to && pg:
		return "nonNil(" + v + ")", false, true
	case from == to:
		return v, false, true
	case from == "int" && (to == "int32" || to == "int64"):
		return to + "(" + v + ")", false, true
	case (from == "int32" || from == "int64") && to == "int":
		return "int(" + v + ")", false, true
	case from == "int64" && to == "*int64":
		return "nullable.Int(" + v + ")", false, true
	case from == "string" && to == "*string":
		return "nullable.String(" + v + ")", false, true
	case (from == "*int64" && to == "int64") || (from == "*string" && to == "string"):
		return "nullable.Deref(" + v + ")", false, true
	case from == "[]byte" && to == "string":
		return "string(" + v + ")", false, true
	case from == "string" && to == "[]byte":
		return "[]byte(" + v + ")", false, true
	case pg && from == "time.Time" && to == "pgtype.Timestamptz":
		return "nullTime(" + v + ")", false, true
	case pg && from == "pgtype.Timestamptz" && to == "time.Time":
		return "fromNullTime(" + v + ")", false, true
	case !pg && from == "time.Time" && to == "string":
		return "fmtTime(" + v + ")", false, true
	case !pg && from == "time.Time" && to == "*string":
		return "fmtNullTime(" + v + ")", false, true
	case !pg && from == "string" && to == "time.Time":
		return "parseTime(" + v + ")", true, true
	case !pg && from == "*string" && to == "time.Time":
		return "parseNullTime(" + v + ")", true, true
	case !pg && strings.HasPrefix(from, "[]") && to == "string":
		return "jsonList(" + v + ")", false, true
	case !pg && from == "string" && to == "[]int64":
		return "parseList(" + v + ")", true, true
	case !pg && from == "bool" && to == "int64":
		return "boolInt(" + v + ")", false, true
	case !pg && from == "int64" && to == "bool":
		return v + " != 0", false, true
	}
	return "", false, false
}

// names are the names driver field f of type typ has in a query.
func names(typ, f string) []string {
	out := []string{f}
	if f == "ID" {
		// A row's ID is its table's key, named after the row (TaskRow.ID:
		// task_id); a params struct's, after the first word of its name
		// (AbortGetParams.ID: abort_id).
		entity := strings.TrimSuffix(typ, "Row")
		if p, ok := strings.CutSuffix(typ, "Params"); ok {
			entity = p
			for i := 1; i < len(p); i++ {
				if unicode.IsUpper(rune(p[i])) {
					entity = p[:i]
					break
				}
			}
		}
		out = append(out, entity+"ID")
	}
	return out
}

// find returns the field of fields that driver field f of typ pairs with.
func find(fields []field, typ, f string) (field, bool) {
	for _, n := range names(typ, f) {
		for _, c := range fields {
			if norm(c.name) == norm(n) {
				return c, true
			}
		}
	}
	return field{}, false
}

// singulars are the names an array parameter's element may have.
func singulars(plural string) []string {
	out := []string{strings.TrimSuffix(plural, "s"), strings.TrimSuffix(plural, "es")}
	if strings.HasSuffix(plural, "ies") {
		out = append(out, strings.TrimSuffix(plural, "ies")+"y")
	}
	return out
}

// exactFirst is fields with the one named name (or its singular) first: a
// field of the same name wins over one that pairs only by a singular.
func exactFirst(fields []field, name string) []field {
	out := slices.Clone(fields)
	sort.SliceStable(out, func(i, j int) bool {
		exact := func(f field) bool {
			return norm(f.name) == norm(name) ||
				slices.ContainsFunc(singulars(name), func(s string) bool { return norm(s) == norm(f.name) })
		}
		return exact(out[i]) && !exact(out[j])
	})
	return out
}

// assign is one field of a struct literal the generated code builds.
type assign struct{ field, expr string }

// writer maps driver struct typ (in variable v) onto query params model:
// every field of the model must be supplied. used names the driver fields
// it read.
func (s *source) writer(typ, v, model string) (out []assign, used map[string]bool, ok bool) {
	src, known := s.structs[typ]
	if !known {
		return nil, nil, false
	}
	used = map[string]bool{}
	for _, m := range s.models[model] {
		matched := false
		for _, f := range exactFirst(src, m.name) {
			if !slices.ContainsFunc(names(typ, f.name), func(n string) bool { return norm(n) == norm(m.name) }) {
				continue
			}
			expr, fallible, ok := s.conv(f.typ, m.typ, v+"."+f.name, s.jsonNames[norm(f.name)], false)
			if !ok || fallible {
				return nil, nil, false
			}
			out, used[f.name], matched = append(out, assign{m.name, expr}), true, true
			break
		}
		if !matched {
			return nil, nil, false
		}
	}
	return out, used, true
}

// arrayWriter maps rows of driver struct typ onto query params model whose
// fields are all arrays, one element per row (Postgres' bulk forms).
func (s *source) arrayWriter(typ, model string) (out []assign, ok bool) {
	src := s.structs[typ]
	for _, m := range s.models[model] {
		elem, isSlice := strings.CutPrefix(m.typ, "[]")
		if !isSlice {
			return nil, false
		}
		matched := false
		for _, f := range exactFirst(src, m.name) {
			hit := slices.ContainsFunc(names(typ, f.name), func(n string) bool {
				return slices.ContainsFunc(singulars(m.name), func(sg string) bool { return norm(sg) == norm(n) }) ||
					norm(n) == norm(m.name)
			})
			if !hit {
				continue
			}
			expr, fallible, ok := s.conv(f.typ, elem, "r."+f.name, s.jsonNames[norm(f.name)], true)
			if !ok || fallible {
				return nil, false
			}
			out, matched = append(out, assign{m.name, expr}), true
			break
		}
		if !matched {
			return nil, false
		}
	}
	return out, len(out) > 0
}

// reader maps query model onto driver row typ: every field of the row must
// be read.
type readField struct {
	field, expr string
	fallible    bool
}

func (s *source) reader(model, typ string) ([]readField, bool) {
	var out []readField
	for _, f := range s.structs[typ] {
		m, ok := find(s.models[model], typ, f.name)
		if !ok {
			return nil, false
		}
		expr, fallible, ok := s.conv(m.typ, f.typ, "r."+m.name, false, false)
		if !ok {
			return nil, false
		}
		out = append(out, readField{f.name, expr, fallible})
	}
	return out, len(out) > 0
}

// gen is the file being written.
type gen struct {
	s        *source
	b        bytes.Buffer
	fallible map[string]bool   // driver row → its reader returns an error
	readers  map[string]string // model → driver row, for the rows generated
	writers  map[string]string // params model → driver type it is written from
	arrays   map[string]string // array params model → driver row type
	each     map[string]string // query with an eachQ → its row's model
}

func (g *gen) p(format string, args ...any) { fmt.Fprintf(&g.b, format, args...) }

func (s *source) render() ([]byte, error) {
	g := &gen{s: s, fallible: map[string]bool{}, readers: map[string]string{}, writers: map[string]string{}, arrays: map[string]string{}, each: map[string]string{}}
	header := fmt.Sprintf("// Code generated by internal/driver/internal/dbgen (go generate). DO NOT EDIT.\n\n"+
		"package %s\n\n"+
		"// The primitives whose query maps onto the driver's types one to one, and\n"+
		"// the mapping of rows and params that the hand-written primitives use.\n\n", s.dialect)
	g.readersAll()
	g.writersAll()
	g.eachAll()
	helpers, err := split(g.b.Bytes())
	if err != nil {
		return nil, err
	}
	g.b.Reset()
	for _, m := range s.order {
		if !s.written[m] {
			g.method(m)
		}
	}
	body := keep(helpers, g.b.String(), string(s.hand)) + g.b.String()
	var head strings.Builder
	head.WriteString("import (\n")
	for _, imp := range []struct{ name, path string }{
		{"context.", "context"}, {"fmt.", "fmt"}, {"time.", "time"}, {"", ""},
		{"pgtype.", "github.com/jackc/pgx/v5/pgtype"}, {"", ""},
		{"driver.", "github.com/cks-dev/cks/internal/driver"},
		{"nullable.", "github.com/cks-dev/cks/internal/driver/internal/nullable"},
		{"dbsqlc.", "github.com/cks-dev/cks/internal/driver/" + string(s.dialect) + "/internal/dbsqlc"},
	} {
		if imp.path == "" {
			head.WriteString("\n")
		} else if strings.Contains(body, imp.name) {
			fmt.Fprintf(&head, "%q\n", imp.path)
		}
	}
	head.WriteString(")\n\n")
	full := header + head.String() + body
	src, err := format.Source([]byte(full))
	if err != nil {
		return nil, fmt.Errorf("generated %s does not parse: %w\n%s", genFile, err, full)
	}
	return src, nil
}

// helper is one generated function: its name and text.
type helper struct{ name, text string }

// split cuts the generated helpers into functions.
func split(src []byte) ([]helper, error) {
	fset := token.NewFileSet()
	text := append([]byte("package x\n\n"), src...)
	f, err := parser.ParseFile(fset, "", text, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("generated helpers do not parse: %w\n%s", err, src)
	}
	var out []helper
	for _, d := range f.Decls {
		fd := d.(*ast.FuncDecl)
		from := fd.Pos()
		if fd.Doc != nil {
			from = fd.Doc.Pos()
		}
		out = append(out, helper{fd.Name.Name, string(text[fset.Position(from).Offset:fset.Position(fd.End()).Offset]) + "\n\n"})
	}
	return out, nil
}

// keep is the text of the helpers that the generated primitives, the
// hand-written files or another kept helper call: an unused one would be
// dead code.
func keep(helpers []helper, generated, hand string) string {
	uses := func(text, name string) bool {
		return regexp.MustCompile(`\b` + name + `\b`).MatchString(text)
	}
	kept := make([]bool, len(helpers))
	for changed := true; changed; {
		changed = false
		for i, h := range helpers {
			if kept[i] {
				continue
			}
			in := uses(generated, h.name) || uses(hand, h.name)
			for j, k := range helpers {
				in = in || (kept[j] && uses(k.text, h.name))
			}
			if in {
				kept[i], changed = true, true
			}
		}
	}
	var b strings.Builder
	for i, h := range helpers {
		if kept[i] {
			b.WriteString(h.text)
		}
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (g *gen) readersAll() {
	for _, model := range sortedKeys(rowOf) {
		typ := rowOf[model]
		if _, ok := g.s.models[model]; !ok {
			continue
		}
		fields, ok := g.s.reader(model, typ)
		if !ok {
			continue
		}
		g.readers[model] = typ
		fallible := slices.ContainsFunc(fields, func(f readField) bool { return f.fallible })
		g.fallible[typ] = fallible
		one, many := readerNames(model)
		g.p("// %s reads a dbsqlc.%s as a driver.%s.\n", one, model, typ)
		if !fallible {
			g.p("func %s(r dbsqlc.%s) driver.%s {\nreturn driver.%s{\n", one, model, typ, typ)
			for _, f := range fields {
				g.p("%s: %s,\n", f.field, f.expr)
			}
			g.p("}\n}\n\n")
			g.p("// %s reads rows with %s.\n", many, one)
			g.p("func %s(rows []dbsqlc.%s) []driver.%s {\nout := make([]driver.%s, len(rows))\n", many, model, typ, typ)
			g.p("for i, r := range rows {\nout[i] = %s(r)\n}\nreturn out\n}\n\n", one)
			continue
		}
		g.p("func %s(r dbsqlc.%s) (driver.%s, error) {\n", one, model, typ)
		for _, f := range fields {
			if f.fallible {
				g.p("%s, err := %s\nif err != nil {\nreturn driver.%s{}, fmt.Errorf(\"%s %s: %%w\", err)\n}\n",
					lowerFirst(f.field), f.expr, typ, typ, f.field)
			}
		}
		g.p("return driver.%s{\n", typ)
		for _, f := range fields {
			expr := f.expr
			if f.fallible {
				expr = lowerFirst(f.field)
			}
			g.p("%s: %s,\n", f.field, expr)
		}
		g.p("}, nil\n}\n\n")
		g.p("// %s reads rows with %s.\n", many, one)
		g.p("func %s(rows []dbsqlc.%s) ([]driver.%s, error) {\nout := make([]driver.%s, len(rows))\n", many, model, typ, typ)
		g.p("for i, r := range rows {\nvar err error\nif out[i], err = %s(r); err != nil {\nreturn nil, err\n}\n}\nreturn out, nil\n}\n\n", one)
	}
}

// readerNames name the readers of model: by its driver row (taskRowOf,
// taskRowsOf), and for a second model read into the same row by the model
// too (taskRowOfTaskClaimRow).
func readerNames(model string) (one, many string) {
	typ := rowOf[model]
	one, many = lowerFirst(typ)+"Of", lowerFirst(typ)+"sOf"
	for _, other := range sortedKeys(rowOf) {
		if other == model {
			break
		}
		if rowOf[other] == typ {
			return one + model, many + model
		}
	}
	return one, many
}

// driverArg is the driver type a query's params are written from: the
// argument of the primitive the query serves (the one of its name, its
// bulk form Name+"Many", or the longest primitive its name begins with).
func (s *source) driverArg(q string) (typ string, slice bool) {
	best, base := "", ""
	for _, m := range sortedKeys(s.methods) {
		b := strings.TrimSuffix(m, "Many")
		// A query is a form of the primitive of the longest name it
		// begins with; of X and XMany (the same base) the one that is
		// bulk as the query is: TaskDedupeFindAny is TaskDedupeFind's.
		tie := len(b) == len(base) && strings.HasSuffix(m, "Many") == strings.HasSuffix(q, "Many")
		if m == q || (best != q && strings.HasPrefix(q, b) && (len(b) > len(base) || tie)) {
			best, base = m, b
		}
	}
	if best == "" || len(s.methods[best].params) != 1 {
		return "", false
	}
	typ = s.methods[best].params[0].typ
	elem, slice := strings.CutPrefix(typ, "[]")
	return strings.TrimPrefix(elem, "driver."), slice
}

// kind is query q's kind (":one", ":many", ":exec", ":batchone", …).
func (s *source) kind(q string) string {
	first, _, _ := strings.Cut(s.sqlOf(q), "\n")
	fields := strings.Fields(first)
	if len(fields) == 0 {
		return ""
	}
	return fields[len(fields)-1]
}

// eachAll writes, in Postgres, eachQ for every query Q that returns rows:
// Q run, and its rows scanned one by one into one model value that each is
// handed, through one list of destinations. dbsqlc's :many method makes a model
// value (it escapes: pgx scans into its fields) and a list of destinations
// for every row, and gathers the rows in a slice of its own, grown by
// appends, that the driver then copies into its rows; with eachQ a
// primitive reads them straight into its own slice, made to size. A row's
// value is overwritten by the next: each keeps a copy (pgx makes every
// []byte and array it scans anew, so a copy shares nothing with the next
// row).
func (g *gen) eachAll() {
	if g.s.dialect != schema.Postgres {
		return
	}
	for _, q := range sortedKeys(g.s.scans) {
		sc, sig := g.s.scans[q], g.s.queries[q]
		model, many := strings.CutPrefix(sig.results[0], "[]")
		if _, ok := g.s.models[model]; !ok || !many || len(sig.results) != 2 || g.s.kind(q) != ":many" || sc.args[0] != q {
			continue
		}
		g.p("// each%s runs dbsqlc's %s, handing each row to each as it is\n// read (one value for every row: each keeps a copy).\n", q, q)
		g.p("func each%s(ctx context.Context, db dbsqlc.DBTX", q)
		for _, a := range sig.params {
			g.p(", %s %s", a.name, qualify(a.typ))
		}
		g.p(", each func(*dbsqlc.%s)) error {\n", model)
		g.p("rows, err := db.Query(ctx, dbsqlc.%s)\n", strings.Join(append([]string{q}, sc.args[1:]...), ", "))
		g.p("if err != nil {\nreturn err\n}\ndefer rows.Close()\n")
		g.p("var i dbsqlc.%s\ndest := []any{%s}\n", model, strings.Join(sc.dests, ", "))
		g.p("for rows.Next() {\nif err := rows.Scan(dest...); err != nil {\nreturn err\n}\neach(&i)\n}\nreturn rows.Err()\n}\n\n")
		g.each[q] = model
	}
}

func (g *gen) writersAll() {
	for _, q := range sortedKeys(g.s.queries) {
		sig := g.s.queries[q]
		if len(sig.params) != 1 {
			continue
		}
		model := strings.TrimPrefix(sig.params[0].typ, "[]")
		if _, ok := g.s.models[model]; !ok {
			continue
		}
		typ, slice := g.s.driverArg(q)
		if typ == "" {
			continue
		}
		name := lowerFirst(model)
		if as, ok := g.s.arrayWriter(typ, model); ok && slice && strings.HasSuffix(q, "Many") {
			g.arrays[model] = typ
			g.p("// %s writes rows as the arrays of dbsqlc.%s, one element a row.\n", name, model)
			g.p("func %s(rows []driver.%s) dbsqlc.%s {\nvar a dbsqlc.%s\nfor _, r := range rows {\n", name, typ, model, model)
			for _, a := range as {
				g.p("a.%s = append(a.%s, %s)\n", a.field, a.field, a.expr)
			}
			g.p("}\nreturn a\n}\n\n")
			continue
		}
		as, _, ok := g.s.writer(typ, "p", model)
		if !ok {
			continue
		}
		g.writers[model] = typ
		g.p("// %s writes a driver.%s as dbsqlc.%s.\n", name, typ, model)
		g.p("func %s(p driver.%s) dbsqlc.%s {\nreturn dbsqlc.%s{\n", name, typ, model, model)
		for _, a := range as {
			g.p("%s: %s,\n", a.field, a.expr)
		}
		g.p("}\n}\n\n")
	}
}

// what names primitive m in errors: its words, lower case.
func what(m string) string {
	var words []string
	start := 0
	for i := 1; i <= len(m); i++ {
		if i == len(m) || unicode.IsUpper(rune(m[i])) && !unicode.IsUpper(rune(m[i-1])) {
			words = append(words, strings.ToLower(m[start:i]))
			start = i
		}
	}
	return strings.Join(words, " ")
}

// zero is the zero value of a result type, as an expression.
func zero(typ string) string {
	switch {
	case strings.HasPrefix(typ, "[]"), strings.HasPrefix(typ, "*"):
		return "nil"
	case typ == "int", typ == "int64", typ == "int32", typ == "float64":
		return "0"
	case typ == "bool":
		return "false"
	case typ == "error":
		return "nil"
	case typ == "string":
		return `""`
	}
	return typ + "{}"
}

// result is the expression that turns a query's result x of type from into
// the primitive's result type to (fallible: it returns an error too).
func (g *gen) result(from, to, x string) (expr string, fallible, ok bool) {
	driverTo := strings.TrimPrefix(strings.TrimPrefix(to, "[]"), "driver.")
	model := strings.TrimPrefix(from, "[]")
	if typ, isRow := g.readers[model]; isRow && typ == driverTo {
		one, many := readerNames(model)
		name := one
		if strings.HasPrefix(from, "[]") && strings.HasPrefix(to, "[]") {
			name = many
		} else if strings.HasPrefix(from, "[]") != strings.HasPrefix(to, "[]") {
			return "", false, false
		}
		return name + "(" + x + ")", g.fallible[typ], true
	}
	switch {
	case from == to:
		return x, false, true
	case from == "int64" && to == "int":
		return "int(" + x + ")", false, true
	case from == "int64" && to == "bool":
		return x + " > 0", false, true
	}
	return "", false, false
}

// call is the query's argument for primitive m (ok false when none maps),
// and the fields of m's params struct it reads.
func (g *gen) call(m string, sig fn, q string, qsig fn) (arg string, used map[string]bool, ok bool) {
	used = map[string]bool{}
	switch {
	case len(qsig.params) == 0:
		// No argument, or a params struct of nothing but the Lock that
		// chose the query (LimitListParams).
		return "", used, len(sig.params) == 0 || g.onlyLock(sig)
	case len(qsig.params) > 1:
		return "", nil, false
	}
	qp := qsig.params[0]
	if _, isModel := g.s.models[qp.typ]; !isModel {
		// One scalar: the primitive's one argument, or the field of its
		// params struct of the same name.
		if len(sig.params) != 1 {
			return "", nil, false
		}
		a := sig.params[0]
		if fields, isStruct := g.s.structs[strings.TrimPrefix(a.typ, "driver.")]; isStruct {
			for _, f := range fields {
				if slices.ContainsFunc(names(strings.TrimPrefix(a.typ, "driver."), f.name), func(n string) bool { return norm(n) == norm(qp.name) }) {
					expr, fallible, ok := g.s.conv(f.typ, qp.typ, a.name+"."+f.name, false, false)
					used[f.name] = true
					return expr, used, ok && !fallible
				}
			}
			return "", nil, false
		}
		expr, fallible, ok := g.s.conv(a.typ, qp.typ, a.name, false, false)
		return expr, used, ok && !fallible
	}
	if len(sig.params) == 1 {
		a := sig.params[0]
		typ := strings.TrimPrefix(a.typ, "driver.")
		if elem, slice := strings.CutPrefix(a.typ, "[]"); slice {
			if g.arrays[qp.typ] == strings.TrimPrefix(elem, "driver.") {
				return lowerFirst(qp.typ) + "(" + a.name + ")", used, true
			}
			return "", nil, false
		}
		if g.writers[qp.typ] != typ {
			return "", nil, false
		}
		_, used, _ = g.s.writer(typ, a.name, qp.typ)
		return lowerFirst(qp.typ) + "(" + a.name + ")", used, true
	}
	// Several scalars: each is the query field whose name ends in its own.
	var b strings.Builder
	fmt.Fprintf(&b, "dbsqlc.%s{\n", qp.typ)
	fields := g.s.models[qp.typ]
	if len(fields) != len(sig.params) {
		return "", nil, false
	}
	for _, f := range fields {
		var hits []field
		for _, a := range sig.params {
			if strings.HasSuffix(norm(f.name), norm(a.name)) {
				hits = append(hits, a)
			}
		}
		if len(hits) != 1 {
			return "", nil, false
		}
		expr, fallible, ok := g.s.conv(hits[0].typ, f.typ, hits[0].name, false, false)
		if !ok || fallible {
			return "", nil, false
		}
		fmt.Fprintf(&b, "%s: %s,\n", f.name, expr)
	}
	b.WriteString("}")
	return b.String(), used, true
}

// choices are primitives that choose their query by their params, alike
// in every dialect: the first variant whose condition holds (none: the
// last) runs. A dialect without every variant's query writes its own.
var choices = map[string][]variant{
	"TaskDedupeFind": {{cond: "p.IncludeTerminal", query: "TaskDedupeFindAny"}, {cond: "", query: "TaskDedupeFindLive"}},
	"VersionList":    {{cond: "p.HeadsOnly", query: "VersionListHeads"}, {cond: "", query: "VersionList"}},
	// A bulk selection locks in id order; a listing has its sort's query.
	"TaskList": {
		{cond: "p.Lock == driver.LockUpdate", query: "TaskListForUpdate"},
		{cond: "p.Sort == driver.TaskSortIDDesc", query: "TaskListIDDesc"},
		{cond: "p.Sort == driver.TaskSortUpdated", query: "TaskListUpdated"},
		{cond: "p.Sort == driver.TaskSortUpdatedDesc", query: "TaskListUpdatedDesc"},
		{cond: "p.Sort == driver.TaskSortPriority", query: "TaskListPriority"},
		{cond: "", query: "TaskList"},
	},
	"ObjectList": {
		{cond: `p.Match != ""`, query: "ObjectListMatching"},
		{cond: "len(p.Statuses) > 0 && p.Unclaimed", query: "ObjectListUnclaimedByStatus"},
		{cond: "len(p.Statuses) > 0", query: "ObjectListByStatus"},
		{cond: "len(p.Kinds) > 0", query: "ObjectListByKind"},
		{cond: "", query: "ObjectList"},
	},
}

// variant is one query of a primitive and when it runs ("" always).
type variant struct {
	cond, query string
	// arg, when not "", is the query's argument as written (a one-id
	// form's id), instead of the one call maps.
	arg string
}

// lockSuffixes name the query of each row lock: a primitive whose params
// carry a Lock runs the query of the lock asked for when its dialect has
// such queries (Postgres), and refuses a lock it has none for; a dialect
// with none (SQLite: one writer) runs the plain query for every lock.
var lockSuffixes = []struct{ lock, suffix string }{
	{"LockNone", ""}, {"LockUpdate", "ForUpdate"}, {"LockUpdateSkip", "ForUpdateSkip"}, {"LockShare", "ForShare"},
}

// method writes primitive m over its query, when one maps onto it.
func (g *gen) method(m string) {
	sig := g.s.methods[m]
	if vs, ok := choices[m]; ok && g.emit(m, sig, vs, "") {
		return
	}
	if lock := g.lockField(sig); lock != "" {
		var (
			vs    []variant
			locks int // the locks with a query of their own
		)
		for _, l := range lockSuffixes {
			if _, ok := g.s.queries[m+l.suffix]; ok {
				locks++
				cond := fmt.Sprintf("%s == driver.%s", lock, l.lock)
				// A lock's query may have its one-id form too (Postgres:
				// TaskGetForUpdate beside TaskGetManyForUpdate).
				if list, one := g.oneID(m, l.suffix, sig); one != "" {
					vs = append(vs, variant{cond: "len(" + list + ") == 1 && " + cond, query: one, arg: list + "[0]"})
				}
				vs = append(vs, variant{cond: cond, query: m + l.suffix})
			}
		}
		if locks > 1 {
			g.emit(m, sig, vs, lock)
			return
		}
	}
	if list, one := g.oneID(m, "", sig); one != "" && g.emit(m, sig, []variant{
		{cond: "len(" + list + ") == 1", query: one, arg: list + "[0]"}, {query: m}}, "") {
		return
	}
	if _, ok := g.s.queries[m]; ok {
		g.emit(m, sig, []variant{{query: m}}, "")
		return
	}
	if q, ok := g.s.queries[strings.TrimSuffix(m, "Many")]; ok && strings.HasSuffix(m, "Many") {
		g.bulk(m, sig, strings.TrimSuffix(m, "Many"), q)
	}
}

// oneID returns, for primitive m reading by a list of ids (its argument,
// or the one []int64 field of its params) with query m+suffix (suffix: a
// lock's, or none), the list and the query of one id the dialect has
// besides that one (TaskGet for TaskGetMany, TaskGetForUpdate for
// TaskGetManyForUpdate, TaskDepListOf for TaskDepList), which a one-id call
// runs instead: it reads by its index where a list parameter would make the
// database walk the list (and Postgres plan the list anew each time).
func (g *gen) oneID(m, suffix string, sig fn) (list, query string) {
	if len(sig.params) != 1 {
		return "", ""
	}
	a := sig.params[0]
	if a.typ == "[]int64" {
		list = a.name
	} else {
		for _, f := range g.s.structs[strings.TrimPrefix(a.typ, "driver.")] {
			if f.typ == "[]int64" {
				if list != "" {
					return "", ""
				}
				list = a.name + "." + f.name
			}
		}
	}
	plain, ok := g.s.queries[m+suffix]
	if list == "" || !ok || len(plain.results) != 2 {
		return "", ""
	}
	for _, q := range []string{strings.TrimSuffix(m, "Many") + suffix, m + "Of" + suffix} {
		one, ok := g.s.queries[q]
		if q != m+suffix && ok && len(one.params) == 1 && one.params[0].typ == "int64" && slices.Equal(one.results, plain.results) {
			return list, q
		}
	}
	return "", ""
}

// onlyLock reports whether sig's one argument is a params struct whose
// fields are all Locks.
func (g *gen) onlyLock(sig fn) bool {
	if len(sig.params) != 1 {
		return false
	}
	fields, ok := g.s.structs[strings.TrimPrefix(sig.params[0].typ, "driver.")]
	if !ok || len(fields) == 0 {
		return false
	}
	for _, f := range fields {
		if f.typ != "Lock" {
			return false
		}
	}
	return true
}

// lockField is "p.Lock" when m's one argument is a params struct with a
// Lock, else "".
func (g *gen) lockField(sig fn) string {
	if len(sig.params) != 1 {
		return ""
	}
	for _, f := range g.s.structs[strings.TrimPrefix(sig.params[0].typ, "driver.")] {
		if f.typ == "Lock" {
			return sig.params[0].name + "." + f.name
		}
	}
	return ""
}

// header writes the doc comment and signature of primitive m.
func (g *gen) header(m string, sig fn, how string) {
	g.p("// %s implements driver.Executor %s.\n", m, how)
	g.p("func (e *executor) %s(ctx context.Context", m)
	for _, a := range sig.params {
		g.p(", %s %s", a.name, a.typ)
	}
	g.p(") ")
	if len(sig.results) > 1 {
		g.p("(%s)", strings.Join(sig.results, ", "))
	} else {
		g.p("%s", sig.results[0])
	}
	g.p(" {\n")
}

// whatExpr is the expression naming primitive m's call in errors: its
// words and, for one scalar argument, its value.
func whatExpr(m string, sig fn) string {
	if len(sig.params) == 1 && (sig.params[0].typ == "string" || sig.params[0].typ == "int64") {
		return fmt.Sprintf("fmt.Sprint(%q, %s)", what(m)+" ", sig.params[0].name)
	}
	return fmt.Sprintf("%q", what(m))
}

// emptyGuard returns early from a primitive whose list argument (guard) is
// empty: there is nothing to read or write.
func (g *gen) emptyGuard(sig fn, guard string) {
	if guard == "" {
		return
	}
	g.p("if len(%s) == 0 {\nreturn ", guard)
	var zs []string
	for _, r := range sig.results {
		zs = append(zs, zero(r))
	}
	g.p("%s\n}\n", strings.Join(zs, ", "))
}

// emit writes m as one call of the query of the variant that applies;
// lock, when not "", is the Lock field the variants switch on (another
// lock is refused). It reports whether it wrote m.
func (g *gen) emit(m string, sig fn, vs []variant, lock string) bool {
	type call struct {
		cond, expr string
		query, arg string // the query and its argument (", arg" or "")
	}
	var (
		calls    []call
		resType  string
		conv     string
		fallible bool
		write    bool
		used     = map[string]bool{}
		guard    string
		voted    bool
	)
	for i, v := range vs {
		qsig, ok := g.s.queries[v.query]
		if !ok {
			return false
		}
		arg, u, ok := g.call(m, sig, v.query, qsig)
		if v.arg != "" {
			arg, ok = v.arg, len(qsig.params) == 1
		}
		if !ok || len(qsig.results) != len(sig.results) {
			return false
		}
		for f := range u {
			used[f] = true
		}
		switch len(sig.results) {
		case 1:
			if qsig.results[0] != "error" || sig.results[0] != "error" {
				return false
			}
		case 2:
			c, f, ok := g.result(qsig.results[0], sig.results[0], "x")
			if !ok || (i > 0 && qsig.results[0] != resType) {
				return false
			}
			conv, fallible, resType = c, f, qsig.results[0]
		default:
			return false
		}
		w := g.s.dialect == schema.SQLite && g.s.isWrite(v.query)
		if i > 0 && w != write {
			return false
		}
		write = w
		if arg != "" {
			arg = ", " + arg
		}
		db := "e.db"
		if g.s.dialect == schema.SQLite {
			db = "e.read"
			if write {
				db = "w"
			}
		}
		calls = append(calls, call{v.cond, fmt.Sprintf("e.d.q.%s(ctx, %s%s)", v.query, db, arg), v.query, arg})
		// A primitive addressed by one list — its argument, the one field
		// its query reads, or the one list a write reads — does nothing
		// for an empty one.
		// Variants guard only when they all guard alike.
		var vg string
		if len(sig.params) == 1 && len(qsig.params) == 1 {
			if strings.HasPrefix(sig.params[0].typ, "[]") {
				vg = sig.params[0].name
			}
			var lists []string
			for _, f := range g.s.structs[strings.TrimPrefix(sig.params[0].typ, "driver.")] {
				if u[f.name] && strings.HasPrefix(f.typ, "[]") {
					lists = append(lists, sig.params[0].name+"."+f.name)
				}
			}
			if len(lists) == 1 && (len(u) == 1 || g.s.isWrite(v.query)) {
				vg = lists[0]
			}
		}
		switch {
		case v.arg != "": // a one-id form: the list's own variant guards
		case !voted:
			guard, voted = vg, true
		case vg != guard:
			guard = ""
		}
	}
	// Every field of a params struct must reach a query, decide the
	// variant, or be a lock SQLite does without: a filter dropped would be
	// ignored silently.
	if len(sig.params) == 1 {
		for _, f := range g.s.structs[strings.TrimPrefix(sig.params[0].typ, "driver.")] {
			ref := sig.params[0].name + "." + f.name
			inCond := slices.ContainsFunc(vs, func(v variant) bool { return strings.Contains(v.cond, ref) })
			if !used[f.name] && !inCond && f.typ != "Lock" && strings.HasSuffix(sig.params[0].typ, "Params") {
				return false
			}
		}
	}
	if len(calls) > 1 && (len(sig.results) == 1 || write) {
		return false
	}
	w := whatExpr(m, sig)
	// Rows read into driver rows go straight into the primitive's slice,
	// through the queries' eachQ (eachAll), when every query has one.
	model, many := strings.CutPrefix(resType, "[]")
	typ, isRow := g.readers[model]
	straight := isRow && many && len(sig.results) == 2 && !write && !g.fallible[typ] &&
		strings.HasPrefix(sig.results[0], "[]") && !slices.ContainsFunc(calls, func(c call) bool { return g.each[c.query] == "" })
	how := "with dbsqlc's " + vs[0].query
	if len(vs) > 1 {
		how = "with the query its params choose"
	}
	g.header(m, sig, how)
	g.emptyGuard(sig, guard)
	// run writes the call(s) assigning x and err (or err alone).
	run := func(assign string) {
		if len(calls) == 1 {
			g.p("%s %s\n", assign, calls[0].expr)
			return
		}
		g.p("switch {\n")
		for _, c := range calls {
			if c.cond == "" {
				g.p("default:\n")
			} else {
				g.p("case %s:\n", c.cond)
			}
			g.p("%s %s\n", strings.Replace(assign, ":=", "=", 1), c.expr)
		}
		if lock != "" {
			g.p("default:\nreturn %s, fmt.Errorf(\"%s: %s: unsupported lock %%d\", %s)\n", zero(sig.results[0]), g.s.dialect, what(m), lock)
		}
		g.p("}\n")
	}
	if straight {
		// A list read by its ids has as many rows at most (a nil result
		// is an empty list, as dbsqlc's).
		if guard != "" {
			g.p("out := make(%s, 0, len(%s))\n", sig.results[0], guard)
		} else {
			g.p("out := %s{}\n", sig.results[0])
		}
		one, _ := readerNames(model)
		g.p("add := func(r *dbsqlc.%s) { out = append(out, %s(*r)) }\n", model, one)
		for i, c := range calls {
			calls[i].expr = fmt.Sprintf("each%s(ctx, e.db%s, add)", c.query, c.arg)
		}
		if len(calls) > 1 {
			g.p("var err error\n")
		}
		run("err :=")
		g.p("if err != nil {\nreturn nil, mapErr(%s, err)\n}\nreturn out, nil\n}\n\n", w)
		return true
	}
	declare := func() {
		if len(calls) > 1 {
			g.p("var (\nx %s\nerr error\n)\n", qualify(resType))
		}
	}
	switch {
	case len(sig.results) == 1 && !write:
		if len(calls) > 1 {
			return false
		}
		g.p("return mapErr(%s, %s)\n}\n\n", w, calls[0].expr)
	case len(sig.results) == 1:
		if len(calls) > 1 {
			return false
		}
		g.p("return e.write(ctx, %s, func(w *wtx) error {\nreturn mapErr(%s, %s)\n})\n}\n\n", w, w, calls[0].expr)
	case !write:
		declare()
		run("x, err :=")
		g.p("if err != nil {\nreturn %s, mapErr(%s, err)\n}\n", zero(sig.results[0]), w)
		if fallible {
			g.p("return %s\n}\n\n", conv)
		} else {
			g.p("return %s, nil\n}\n\n", conv)
		}
	default:
		if len(calls) > 1 {
			return false
		}
		g.p("var out %s\nerr := e.write(ctx, %s, func(w *wtx) error {\n", sig.results[0], w)
		g.p("x, err := %s\nif err != nil {\nreturn mapErr(%s, err)\n}\n", calls[0].expr, w)
		if fallible {
			g.p("out, err = %s\nreturn err\n})\n", conv)
		} else {
			g.p("out = %s\nreturn nil\n})\n", conv)
		}
		g.p("return out, err\n}\n\n")
	}
	return true
}

// qualify names a dbsqlc type from outside its package.
func qualify(typ string) string {
	elem, slice := strings.CutPrefix(typ, "[]")
	if len(elem) > 0 && unicode.IsUpper(rune(elem[0])) {
		elem = "dbsqlc." + elem
	}
	if slice {
		return "[]" + elem
	}
	return elem
}

// bulk writes m, the bulk form of the one-row query q: SQLite runs q once
// a row in one write transaction; Postgres sends q once a row in one batch.
func (g *gen) bulk(m string, sig fn, q string, qsig fn) {
	if len(sig.params) != 1 || len(qsig.params) != 1 {
		return
	}
	rows := sig.params[0]
	elem, slice := strings.CutPrefix(rows.typ, "[]")
	elem = strings.TrimPrefix(elem, "driver.")
	qp := qsig.params[0]
	batch := strings.HasPrefix(qp.typ, "[]")
	model := strings.TrimPrefix(qp.typ, "[]")
	if !slice || g.writers[model] != elem || batch != (g.s.dialect == schema.Postgres) {
		return
	}
	w := fmt.Sprintf("%q", what(m))
	res := sig.results[0]
	if g.s.dialect == schema.Postgres {
		// The batch's results: ids (QueryRow) or none (Exec).
		var idsBack bool
		switch {
		case len(sig.results) == 2 && res == "[]int64" && g.s.kind(q) == ":batchone":
			idsBack = true
		case len(sig.results) == 1 && g.s.kind(q) == ":batchexec":
		default:
			return
		}
		g.header(m, sig, "with one batch of dbsqlc's "+q)
		g.emptyGuard(sig, sig.params[0].name)
		g.p("args := make([]dbsqlc.%s, len(%s))\nfor i, r := range %s {\nargs[i] = %s(r)\n}\n", model, rows.name, rows.name, lowerFirst(model))
		if idsBack {
			g.p("return batchIDs(len(args), %s, e.d.q.%s(ctx, e.db, args).QueryRow)\n}\n\n", w, q)
		} else {
			g.p("var errs []error\ne.d.q.%s(ctx, e.db, args).Exec(func(_ int, err error) { errs = append(errs, err) })\n", q)
			g.p("return mapErr(%s, firstErr(errs))\n}\n\n", w)
		}
		return
	}
	// SQLite: what each row's statement gives back, gathered.
	var gather string
	one := ""
	switch {
	case len(sig.results) == 1 && len(qsig.results) == 1:
	case res == "int" && qsig.results[0] == "int64":
		gather = "n += int(x)"
	case res == "[]int64" && qsig.results[0] == "int64":
		gather = "out = append(out, x)"
	case strings.HasPrefix(res, "[]") && g.readers[qsig.results[0]] == strings.TrimPrefix(res, "[]driver."):
		one, _ = readerNames(qsig.results[0])
	default:
		return
	}
	g.header(m, sig, "with one dbsqlc."+q+" a row")
	g.emptyGuard(sig, sig.params[0].name)
	switch {
	case len(sig.results) == 1:
		g.p("return e.write(ctx, %s, func(w *wtx) error {\nfor _, r := range %s {\n", w, rows.name)
		g.p("if err := e.d.q.%s(ctx, w, %s(r)); err != nil {\nreturn mapErr(%s, err)\n}\n}\nreturn nil\n})\n}\n\n", q, lowerFirst(model), w)
		return
	case res == "int":
		g.p("var n int\n")
	default:
		g.p("var out %s\n", res)
	}
	g.p("err := e.write(ctx, %s, func(w *wtx) error {\n", w)
	if res == "int" {
		g.p("n = 0\n")
	} else {
		g.p("out = make(%s, 0, len(%s))\n", res, rows.name)
	}
	g.p("for _, r := range %s {\nx, err := e.d.q.%s(ctx, w, %s(r))\nif err != nil {\nreturn mapErr(%s, err)\n}\n", rows.name, q, lowerFirst(model), w)
	if one != "" {
		if g.fallible[g.readers[qsig.results[0]]] {
			g.p("v, err := %s(x)\nif err != nil {\nreturn err\n}\nout = append(out, v)\n", one)
		} else {
			g.p("out = append(out, %s(x))\n", one)
		}
	} else {
		g.p("%s\n", gather)
	}
	g.p("}\nreturn nil\n})\n")
	if res == "int" {
		g.p("return n, err\n}\n\n")
	} else {
		g.p("if err != nil {\nreturn nil, err\n}\nreturn out, nil\n}\n\n")
	}
}

// norm is a name without case and underscores.
func norm(s string) string { return strings.ToLower(strings.ReplaceAll(s, "_", "")) }

// lowerFirst lowers a name's leading capitals (ID → id, TaskRow → taskRow,
// TS → ts).
func lowerFirst(s string) string {
	r := []rune(s)
	for i := range r {
		if !unicode.IsUpper(r[i]) {
			break
		}
		if i > 0 && i+1 < len(r) && unicode.IsLower(r[i+1]) {
			break
		}
		r[i] = unicode.ToLower(r[i])
	}
	return string(r)
}
