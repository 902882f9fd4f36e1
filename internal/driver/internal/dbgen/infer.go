package main

// What a query's parameters and result columns are, read from its tokens
// and the table list: a parameter is what it is cast to, or what the
// column it is compared with, assigned to or inserted into is; a result
// column is the column it names, or what its expression is cast to. A
// parameter or column this cannot tell is an error naming it, to be fixed
// with a cast in the query.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cks-dev/cks/internal/driver/schema"
)

// sqlType is a parameter's or a column's type: one of the table list's
// (base, a schema.Type), or of a cast, and whether it may be NULL.
type sqlType struct {
	base     schema.Type
	array    bool
	nullable bool
}

// column is a result column, or a table's.
type column struct {
	name string
	typ  sqlType
	// embed, for sqlc.embed(alias), is the columns of alias's row, read
	// into one field of the table's row type.
	embed []column
}

// param is a query parameter, numbered by its first appearance.
type param struct {
	name string
	typ  sqlType
}

// analyzed is a query as the generator writes it.
type analyzed struct {
	q       *sqlQuery
	sql     string // the SQL to send: stars expanded, parameters numbered
	params  []param
	columns []column // the result, nil for none
	model   string   // the table whose row the result is, "" for none
}

// catalog is the table list of one dialect, by table name.
type catalog struct {
	d      schema.Dialect
	tables map[string][]column
	order  []string
}

func newCatalog(d schema.Dialect) *catalog {
	c := &catalog{d: d, tables: map[string][]column{}}
	for _, t := range schema.TablesOf(d) {
		var cols []column
		for _, col := range t.Columns {
			nullable := !col.NotNull && !col.PrimaryKey && col.Type != schema.ID && col.Type != schema.Identity
			if slices.Contains(t.PrimaryKey, col.Name) {
				nullable = false
			}
			cols = append(cols, column{name: col.Name, typ: sqlType{base: col.Type, nullable: nullable}})
		}
		c.tables[t.Name] = cols
		c.order = append(c.order, t.Name)
	}
	return c
}

// scope is what names a statement's column references may resolve to: its
// tables by alias (the table's own name included) and the CTEs before it.
type scope struct {
	cat     *catalog
	aliases map[string][]column // alias or table or CTE name → its columns
	tables  []string            // the aliases, in order of appearance
}

// analyze reads q.
func (c *catalog) analyze(q *sqlQuery) (*analyzed, error) {
	a := &analyzed{q: q}
	sc := &scope{cat: c, aliases: map[string][]column{}}
	toks := q.toks
	// The CTEs: WITH name AS ( … ) [, name AS ( … )]… then the statement.
	start := skipSpace(toks, 0)
	if start < len(toks) && toks[start].lower() == "with" {
		i := start + 1
		for {
			i = skipSpace(toks, i)
			name := at(toks, i).text
			i = skipSpace(toks, i+1)
			var named []string // WITH name (a, b) AS: the columns' names
			if at(toks, i).text == "(" {
				end := matchParen(toks, i)
				for _, t := range words(toks[i+1 : end]) {
					if t.kind == tWord {
						named = append(named, t.text)
					}
				}
				i = skipSpace(toks, end+1)
			}
			if at(toks, i).lower() != "as" {
				return nil, fmt.Errorf("%s: expected AS after WITH %s", q.name, name)
			}
			i = skipSpace(toks, i+1)
			if at(toks, i).text != "(" {
				return nil, fmt.Errorf("%s: expected ( after %s AS", q.name, name)
			}
			end := matchParen(toks, i)
			inner := &scope{cat: c, aliases: cloneAliases(sc.aliases)}
			// A CTE whose columns cannot be told is fine until a star or
			// a reference needs them.
			cols, _ := inner.result(toks[i+1 : end])
			cols = slices.Clone(cols) // a table's own columns, maybe: renamed below
			for n := range min(len(named), len(cols)) {
				cols[n].name = named[n]
			}
			sc.aliases[name] = cols
			i = skipSpace(toks, end+1)
			if at(toks, i).text != "," {
				start = i
				break
			}
			i++
		}
	}
	sc.collect(toks)
	cols, err := sc.result(toks[start:])
	switch {
	case err != nil && (q.kind == ":one" || q.kind == ":many" || q.kind == ":batchone"):
		return nil, fmt.Errorf("%s: %w", q.name, err)
	case q.kind == ":one" || q.kind == ":many" || q.kind == ":batchone":
		a.columns = cols
	}
	if err := a.inferParams(sc); err != nil {
		return nil, err
	}
	a.model = c.modelOf(cols)
	if a.sql, err = a.render(sc); err != nil {
		return nil, fmt.Errorf("%s: %w", q.name, err)
	}
	return a, nil
}

func cloneAliases(m map[string][]column) map[string][]column {
	out := make(map[string][]column, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// collect records every table toks name after FROM, JOIN, UPDATE, INTO or
// DELETE FROM, with its alias; a subquery there (FROM (SELECT …) alias),
// and ROWS FROM (unnest(…), …) AS alias(names), by their alias.
func (sc *scope) collect(toks []tok) {
	for i := 0; i < len(toks); i++ {
		switch toks[i].lower() {
		case "from", "join", "update", "into":
		default:
			continue
		}
		j := skipSpace(toks, i+1)
		if j < len(toks) && toks[j].lower() == "lateral" {
			j = skipSpace(toks, j+1)
		}
		if j >= len(toks) {
			continue
		}
		var cols []column
		var after int
		switch {
		case toks[j].text == "(":
			end := matchParen(toks, j)
			inner := &scope{cat: sc.cat, aliases: cloneAliases(sc.aliases), tables: slices.Clone(sc.tables)}
			cols, _ = inner.result(toks[j+1 : end])
			after = end + 1
		case toks[j].lower() == "rows":
			f := skipSpace(toks, j+1)
			open := skipSpace(toks, f+1)
			if at(toks, f).lower() != "from" || at(toks, open).text != "(" {
				continue
			}
			end := matchParen(toks, open)
			for _, arg := range splitArgs(toks[open+1 : end]) {
				t, _, err := sc.exprType(words(arg))
				if err != nil {
					t = sqlType{base: -1}
				}
				cols = append(cols, column{typ: t})
			}
			after = end + 1
		case toks[j].kind == tWord:
			var ok bool
			name := toks[j].text
			if cols, ok = sc.cat.tables[name]; !ok {
				if cols, ok = sc.aliases[name]; !ok {
					continue
				}
			}
			sc.add(name, cols)
			after = j + 1
		default:
			continue
		}
		k := skipSpace(toks, after)
		if k < len(toks) && toks[k].lower() == "as" {
			k = skipSpace(toks, k+1)
		}
		if k >= len(toks) || toks[k].kind != tWord || keyword(toks[k].lower()) {
			continue
		}
		alias := toks[k].text
		// alias(a, b, …): the columns' names.
		if open := skipSpace(toks, k+1); open < len(toks) && toks[open].text == "(" {
			end := matchParen(toks, open)
			n := 0
			named := slices.Clone(cols)
			for _, t := range words(toks[open+1 : end]) {
				if t.kind == tWord && n < len(named) {
					named[n].name = t.text
					n++
				}
			}
			cols = named
		}
		sc.add(alias, cols)
	}
}

func (sc *scope) add(alias string, cols []column) {
	if _, ok := sc.aliases[alias]; !ok || !slices.Contains(sc.tables, alias) {
		sc.tables = append(sc.tables, alias)
	}
	sc.aliases[alias] = cols
}

// keyword reports whether w (lower case) is a keyword that may follow a
// table name, so is no alias.
func keyword(w string) bool {
	switch w {
	case "where", "set", "on", "join", "left", "right", "inner", "outer", "cross", "order", "group", "limit",
		"returning", "values", "select", "using", "for", "union", "having", "default", "offset", "natural", "lateral":
		return true
	}
	return false
}

// lookup finds the column a reference names: alias.name, or name in the
// one table of the scope that has it (the first, when several do).
func (sc *scope) lookup(alias, name string) (column, bool) {
	if alias != "" {
		for _, c := range sc.aliases[alias] {
			if c.name == name {
				return c, true
			}
		}
		return column{}, false
	}
	for _, t := range sc.tables {
		for _, c := range sc.aliases[t] {
			if c.name == name {
				return c, true
			}
		}
	}
	return column{}, false
}

// result is what the statement toks returns: its top-level SELECT list,
// or its RETURNING list; nil for none.
func (sc *scope) result(toks []tok) ([]column, error) {
	inner := &scope{cat: sc.cat, aliases: cloneAliases(sc.aliases), tables: slices.Clone(sc.tables)}
	inner.collect(toks)
	items, ok := resultList(toks)
	if !ok {
		return nil, nil
	}
	var out []column
	for n, item := range items {
		cols, err := inner.item(item, n+1)
		if err != nil {
			return nil, err
		}
		out = append(out, cols...)
	}
	return out, nil
}

// resultList splits the top-level result list of toks into its items.
func resultList(toks []tok) ([][]tok, bool) {
	from, to := -1, len(toks)
	depth := 0
	for i, t := range toks {
		switch t.text {
		case "(":
			depth++
			continue
		case ")":
			depth--
			continue
		}
		if depth != 0 {
			continue
		}
		switch t.lower() {
		case "select":
			if from < 0 {
				from = i + 1
			}
		case "returning":
			from = i + 1
			to = len(toks)
		case "from":
			if from >= 0 && to == len(toks) && !slices.ContainsFunc(toks[:i], func(t tok) bool { return t.lower() == "returning" }) {
				to = i
			}
		}
	}
	if from < 0 {
		return nil, false
	}
	if from > to {
		to = len(toks)
	}
	var items [][]tok
	depth = 0
	cur := []tok{}
	for _, t := range toks[from:to] {
		switch t.text {
		case "(":
			depth++
		case ")":
			depth--
		}
		if depth == 0 && t.text == "," {
			items = append(items, trimSpace(cur))
			cur = []tok{}
			continue
		}
		cur = append(cur, t)
	}
	items = append(items, trimSpace(cur))
	return items, true
}

func trimSpace(toks []tok) []tok {
	for len(toks) > 0 && (toks[0].kind == tSpace || toks[0].kind == tComment) {
		toks = toks[1:]
	}
	for len(toks) > 0 && (toks[len(toks)-1].kind == tSpace || toks[len(toks)-1].kind == tComment) {
		toks = toks[:len(toks)-1]
	}
	return toks
}

// words is toks without white space and comments.
func words(toks []tok) []tok {
	var out []tok
	for _, t := range toks {
		if t.kind != tSpace && t.kind != tComment {
			out = append(out, t)
		}
	}
	return out
}

// item is the columns of one result item, the n-th.
func (sc *scope) item(item []tok, n int) ([]column, error) {
	w := words(item)
	if len(w) > 0 && w[0].lower() == "distinct" {
		w = w[1:]
		if len(w) > 0 && w[0].lower() == "on" && len(w) > 1 && w[1].text == "(" {
			w = w[matchParen(w, 1)+1:]
		}
	}
	// sqlc.embed(alias): the row of alias's table as one field.
	if len(w) == 6 && w[0].lower() == "sqlc" && w[2].lower() == "embed" {
		cols, ok := sc.aliases[w[4].text]
		if !ok {
			return nil, fmt.Errorf("sqlc.embed(%s) names no table", w[4].text)
		}
		return []column{{name: "embed", embed: cols}}, nil
	}
	switch {
	case len(w) == 1 && w[0].text == "*":
		if len(sc.tables) == 0 {
			return nil, fmt.Errorf("* without a table")
		}
		return sc.aliases[sc.tables[0]], nil
	case len(w) == 3 && w[1].text == "." && w[2].text == "*":
		cols, ok := sc.aliases[w[0].text]
		if !ok {
			return nil, fmt.Errorf("%s.* names no table", w[0].text)
		}
		return cols, nil
	}
	name := ""
	expr := w
	if len(w) >= 3 && w[len(w)-2].lower() == "as" && w[len(w)-1].kind == tWord {
		name, expr = w[len(w)-1].text, w[:len(w)-2]
	}
	typ, colName, err := sc.exprType(expr)
	if err != nil {
		return nil, fmt.Errorf("result column %d (%s): %w", n, joinText(item), err)
	}
	if name == "" {
		name = colName
	}
	if name == "" {
		name = fmt.Sprintf("column_%d", n)
	}
	return []column{{name: name, typ: typ}}, nil
}

// exprType is the type of a result expression, and its column's name when
// it is a plain column reference (or the function's name for an aggregate).
func (sc *scope) exprType(w []tok) (sqlType, string, error) {
	// alias.column or column
	if len(w) == 3 && w[0].kind == tWord && w[1].text == "." && w[2].kind == tWord {
		c, ok := sc.lookup(w[0].text, w[2].text)
		if !ok {
			return sqlType{}, "", fmt.Errorf("no column %s.%s", w[0].text, w[2].text)
		}
		return c.typ, c.name, nil
	}
	if len(w) == 1 && w[0].kind == tWord {
		c, ok := sc.lookup("", w[0].text)
		if !ok {
			return sqlType{}, "", fmt.Errorf("no column %s", w[0].text)
		}
		return c.typ, c.name, nil
	}
	// A cast at the end: expr::type (Postgres), or CAST(expr AS type).
	if t, ok := trailingCast(w); ok {
		return t, "", nil
	}
	if len(w) >= 3 && w[0].kind == tWord && w[1].text == "(" && matchParen(w, 1) == len(w)-1 {
		fn := w[0].lower()
		args := w[2 : len(w)-1]
		switch fn {
		case "count":
			return sqlType{base: schema.BigInt}, "count", nil
		case "unnest":
			t, _, err := sc.exprType(args)
			if err != nil {
				return sqlType{}, "", err
			}
			if !t.array && t.base != schema.BigIntArray {
				return sqlType{}, "", fmt.Errorf("unnest of no array")
			}
			if t.base == schema.BigIntArray {
				t.base = schema.BigInt
			}
			t.array = false
			return t, "unnest", nil
		case "array_agg":
			first := words(splitArgs(args)[0])
			for k, x := range first { // array_agg(x ORDER BY …)
				if x.lower() == "order" {
					first = first[:k]
					break
				}
			}
			t, _, err := sc.exprType(first)
			if err != nil {
				return sqlType{}, "", err
			}
			t.array, t.nullable = true, false
			return t, "array_agg", nil
		case "cast":
			if t, ok := castType(args); ok {
				return t, "", nil
			}
		case "exists":
			return sqlType{base: schema.Bool}, "exists", nil
		case "coalesce":
			first := splitArgs(args)[0]
			t, _, err := sc.exprType(first)
			if err != nil {
				return sqlType{}, "", err
			}
			t.nullable = false
			return t, "coalesce", nil
		case "max", "min":
			t, _, err := sc.exprType(args)
			if err != nil {
				return sqlType{}, "", err
			}
			t.nullable = true
			return t, fn, nil
		}
	}
	// A parameter cast, alone: @x::type or CAST(@x AS type).
	if len(w) >= 1 && w[0].kind == tParam {
		if t, ok := sc.paramType(w, 0); ok {
			return t, "", nil
		}
	}
	// A comparison at the top level is a boolean.
	depth := 0
	for _, t := range w {
		switch t.text {
		case "(":
			depth++
		case ")":
			depth--
		}
		if depth == 0 && (slices.Contains(comparisons, t.text) || t.lower() == "is" || t.lower() == "in") {
			return sqlType{base: schema.Bool}, "", nil
		}
	}
	return sqlType{}, "", fmt.Errorf("cannot tell its type: cast it")
}

// splitArgs splits a function's arguments at its top-level commas.
func splitArgs(w []tok) [][]tok {
	var out [][]tok
	depth, cur := 0, []tok{}
	for _, t := range w {
		switch t.text {
		case "(":
			depth++
		case ")":
			depth--
		}
		if depth == 0 && t.text == "," {
			out = append(out, cur)
			cur = []tok{}
			continue
		}
		cur = append(cur, t)
	}
	return append(out, cur)
}

// trailingCast is the type w ends by casting to: "… :: type [ [] ]".
func trailingCast(w []tok) (sqlType, bool) {
	for i := len(w) - 1; i > 0; i-- {
		if w[i].text == "::" {
			return pgCast(w[i+1:])
		}
		if w[i].kind != tWord && w[i].text != "[" && w[i].text != "]" {
			return sqlType{}, false
		}
	}
	return sqlType{}, false
}

// pgCast reads a Postgres type name: w is its words.
func pgCast(w []tok) (sqlType, bool) {
	var t sqlType
	var name []string
	for _, x := range w {
		switch x.text {
		case "[":
			t.array = true
		case "]":
		default:
			if x.kind != tWord {
				return sqlType{}, false
			}
			name = append(name, strings.ToLower(x.text))
		}
	}
	switch strings.Join(name, " ") {
	case "bigint", "int8":
		t.base = schema.BigInt
	case "int", "integer", "int4":
		t.base = schema.Int
	case "text", "varchar":
		t.base = schema.Text
	case "timestamptz":
		t.base = schema.Time
	case "boolean", "bool":
		t.base = schema.Bool
	case "jsonb":
		t.base = schema.JSON
	case "float8", "double precision":
		t.base = schema.Float
	default:
		return sqlType{}, false
	}
	return t, true
}

// castType reads CAST's arguments "expr AS type" (SQLite's types).
func castType(args []tok) (sqlType, bool) {
	if len(args) < 3 || args[len(args)-2].lower() != "as" {
		return sqlType{}, false
	}
	switch args[len(args)-1].lower() {
	case "integer":
		return sqlType{base: schema.BigInt}, true
	case "text":
		return sqlType{base: schema.Text}, true
	case "boolean":
		return sqlType{base: schema.Bool}, true
	case "real":
		return sqlType{base: schema.Float}, true
	}
	return pgCast(args[len(args)-1:])
}

// comparisons are the operators a parameter may be compared to a column with.
var comparisons = []string{"=", "<>", "!=", "<", "<=", ">", ">="}

// inferParams numbers a's parameters and finds each one's type from its
// occurrences: the first that tells it.
func (a *analyzed) inferParams(sc *scope) error {
	toks := a.q.toks
	seen := map[string]int{}
	for i, t := range toks {
		if t.kind != tParam {
			continue
		}
		at, ok := seen[t.name]
		if !ok {
			at = len(a.params)
			seen[t.name] = at
			a.params = append(a.params, param{name: t.name, typ: sqlType{base: -1}})
		}
		p := &a.params[at]
		if p.typ.base != -1 {
			continue
		}
		typ, ok := sc.paramType(toks, i)
		if !ok {
			continue
		}
		if t.nullable {
			typ.nullable = true
		}
		p.typ = typ
	}
	for _, p := range a.params {
		if p.typ.base == -1 {
			return fmt.Errorf("%s: cannot tell the type of @%s: cast it", a.q.name, p.name)
		}
	}
	return nil
}

// paramType is the type the parameter toks[i] has by its context.
func (sc *scope) paramType(toks []tok, i int) (sqlType, bool) {
	next := skipSpace(toks, i+1)
	prev := skipSpaceBack(toks, i-1)
	// @x::type
	if next < len(toks) && toks[next].text == "::" {
		var w []tok
		for j := skipSpace(toks, next+1); j < len(toks); j = skipSpace(toks, j+1) {
			if toks[j].kind == tWord || toks[j].text == "[" || toks[j].text == "]" {
				if toks[j].kind == tWord && len(w) > 0 && w[len(w)-1].kind == tWord &&
					!(w[len(w)-1].lower() == "double" && toks[j].lower() == "precision") {
					break
				}
				w = append(w, toks[j])
				continue
			}
			break
		}
		t, ok := pgCast(w)
		return t, ok
	}
	// CAST(@x AS type)
	if prev >= 0 && toks[prev].text == "(" && next < len(toks) && toks[next].lower() == "as" {
		if p2 := skipSpaceBack(toks, prev-1); p2 >= 0 && toks[p2].lower() == "cast" {
			ty := skipSpace(toks, next+1)
			return castType([]tok{toks[i], toks[next], toks[ty]})
		}
	}
	// column op @x, @x op column
	if prev >= 0 && slices.Contains(comparisons, toks[prev].text) {
		if c, ok := sc.columnBefore(toks, skipSpaceBack(toks, prev-1)); ok {
			return c.typ, true
		}
	}
	if next < len(toks) && slices.Contains(comparisons, toks[next].text) {
		if c, ok := sc.columnAfter(toks, skipSpace(toks, next+1)); ok {
			return c.typ, true
		}
	}
	// LIMIT @x
	if prev >= 0 && (toks[prev].lower() == "limit" || toks[prev].lower() == "offset") {
		if sc.cat.d == schema.Postgres {
			return sqlType{base: schema.Int}, true
		}
		return sqlType{base: schema.BigInt}, true
	}
	// INSERT INTO t (c1, c2, …) VALUES (…, @x, …) or SELECT …, @x, …
	if c, ok := sc.insertColumn(toks, i); ok {
		return c.typ, true
	}
	return sqlType{}, false
}

// columnBefore is the column the reference ending at toks[j] names.
func (sc *scope) columnBefore(toks []tok, j int) (column, bool) {
	if j >= 0 && toks[j].kind == tQuoted { // column COLLATE "C"
		if c := skipSpaceBack(toks, j-1); c >= 0 && toks[c].lower() == "collate" {
			j = skipSpaceBack(toks, c-1)
		}
	}
	if j < 0 || toks[j].kind != tWord {
		return column{}, false
	}
	if d := skipSpaceBack(toks, j-1); d >= 0 && toks[d].text == "." {
		if a := skipSpaceBack(toks, d-1); a >= 0 && toks[a].kind == tWord {
			return sc.lookup(toks[a].text, toks[j].text)
		}
		return column{}, false
	}
	return sc.lookup("", toks[j].text)
}

// columnAfter is the column the reference starting at toks[j] names.
func (sc *scope) columnAfter(toks []tok, j int) (column, bool) {
	if j >= len(toks) || toks[j].kind != tWord {
		return column{}, false
	}
	if d := skipSpace(toks, j+1); d < len(toks) && toks[d].text == "." {
		if c := skipSpace(toks, d+1); c < len(toks) && toks[c].kind == tWord {
			return sc.lookup(toks[j].text, toks[c].text)
		}
		return column{}, false
	}
	return sc.lookup("", toks[j].text)
}

// insertColumn is the column of an INSERT's column list that the
// parameter toks[i] is the value of, by its place in the VALUES row or the
// SELECT list that follows the column list.
func (sc *scope) insertColumn(toks []tok, i int) (column, bool) {
	into := -1
	for j := 0; j < i; j++ {
		if toks[j].lower() == "into" {
			into = j
		}
	}
	if into < 0 {
		return column{}, false
	}
	tbl := skipSpace(toks, into+1)
	open := skipSpace(toks, tbl+1)
	if open >= len(toks) || toks[open].text != "(" {
		return column{}, false
	}
	end := matchParen(toks, open)
	var names []string
	for _, t := range words(toks[open+1 : end]) {
		if t.kind == tWord {
			names = append(names, t.text)
		}
	}
	// The values: the list after VALUES ( or SELECT, at depth 0 of it.
	k := skipSpace(toks, end+1)
	var from int
	switch at(toks, k).lower() {
	case "values":
		from = skipSpace(toks, k+1) + 1
	case "select":
		from = k + 1
	default:
		return column{}, false
	}
	if i < from {
		return column{}, false
	}
	pos, depth := 0, 0
	for j := from; j < i; j++ {
		switch toks[j].text {
		case "(":
			depth++
		case ")":
			depth--
		case ",":
			if depth == 0 {
				pos++
			}
		}
		if depth < 0 {
			return column{}, false
		}
	}
	if depth != 0 || pos >= len(names) {
		return column{}, false
	}
	cols := sc.cat.tables[at(toks, tbl).text]
	for _, c := range cols {
		if c.name == names[pos] {
			return c, true
		}
	}
	return column{}, false
}

// modelOf is the table whose columns cols are, in their order; "".
func (c *catalog) modelOf(cols []column) string {
	if len(cols) == 0 {
		return ""
	}
	for _, name := range c.order {
		t := c.tables[name]
		if len(t) == len(cols) && slices.EqualFunc(t, cols, func(x, y column) bool { return x.name == y.name && x.typ == y.typ }) {
			return name
		}
	}
	return ""
}

// render is the SQL a sends: its stars expanded to the columns they stand
// for and its parameters numbered ($n, or ?n on SQLite).
func (a *analyzed) render(sc *scope) (string, error) {
	var b strings.Builder
	number := map[string]int{}
	for i, p := range a.params {
		number[p.name] = i + 1
	}
	toks := a.q.toks
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.kind == tWord && t.lower() == "sqlc" && i+5 < len(toks) && toks[i+2].lower() == "embed":
			// sqlc.embed(alias): the columns of alias's table.
			alias := toks[i+4].text
			for n, c := range sc.aliases[alias] {
				if n > 0 {
					b.WriteString(", ")
				}
				b.WriteString(alias + "." + quote(c.name))
			}
			i += 5
		case t.kind == tParam:
			if sc.cat.d == schema.Postgres {
				fmt.Fprintf(&b, "$%d", number[t.name])
			} else {
				fmt.Fprintf(&b, "?%d", number[t.name])
			}
		case t.text == "*" && a.isStar(toks, i):
			if p := skipSpaceBack(toks, i-1); p >= 0 && toks[p].text == "." {
				alias := at(toks, skipSpaceBack(toks, p-1)).text
				cols, ok := sc.aliases[alias]
				if !ok {
					return "", fmt.Errorf("%s.* names no table", alias)
				}
				// "alias." is written already; the first column follows it.
				for n, c := range cols {
					if n > 0 {
						b.WriteString(", " + alias + ".")
					}
					b.WriteString(quote(c.name))
				}
				continue
			}
			if len(sc.tables) == 0 {
				return "", fmt.Errorf("* without a table")
			}
			for n, c := range sc.aliases[sc.tables[0]] {
				if n > 0 {
					b.WriteString(", ")
				}
				b.WriteString(quote(c.name))
			}
		default:
			b.WriteString(t.text)
		}
	}
	return b.String(), nil
}

// isStar reports whether the * at toks[i] is a result item (not a product
// or count(*)).
func (a *analyzed) isStar(toks []tok, i int) bool {
	p := skipSpaceBack(toks, i-1)
	if p < 0 {
		return false
	}
	if toks[p].text == "." {
		return true
	}
	if toks[p].text == ")" { // SELECT DISTINCT ON (…) *
		open := p
		for depth := 0; open >= 0; open-- {
			if toks[open].text == ")" {
				depth++
			} else if toks[open].text == "(" {
				if depth--; depth == 0 {
					break
				}
			}
		}
		on := skipSpaceBack(toks, open-1)
		p = skipSpaceBack(toks, on-1)
		if on < 0 || p < 0 || toks[on].lower() != "on" || toks[p].lower() != "distinct" {
			return false
		}
	}
	if toks[p].lower() == "distinct" {
		p = skipSpaceBack(toks, p-1)
	}
	return p >= 0 && (toks[p].lower() == "select" || toks[p].lower() == "returning")
}

// quote quotes a column name that is an SQL keyword where a star expands
// to it (cks_transition_log.action).
func quote(name string) string {
	if name == "action" {
		return `"` + name + `"`
	}
	return name
}

// at is toks[i], or an empty token past the end.
func at(toks []tok, i int) tok {
	if i < 0 || i >= len(toks) {
		return tok{}
	}
	return toks[i]
}

func skipSpace(toks []tok, i int) int {
	for i < len(toks) && (toks[i].kind == tSpace || toks[i].kind == tComment) {
		i++
	}
	return i
}

func skipSpaceBack(toks []tok, i int) int {
	for i >= 0 && (toks[i].kind == tSpace || toks[i].kind == tComment) {
		i--
	}
	return i
}

// matchParen is the index of the ) closing the ( at toks[i].
func matchParen(toks []tok, i int) int {
	depth := 0
	for j := i; j < len(toks); j++ {
		switch toks[j].text {
		case "(":
			depth++
		case ")":
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return len(toks) - 1
}

func joinText(toks []tok) string {
	var b strings.Builder
	for _, t := range toks {
		b.WriteString(t.text)
	}
	return strings.Join(strings.Fields(b.String()), " ")
}
