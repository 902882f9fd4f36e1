// Package querytext reads the drivers' query files: each query is a
// "-- name: Name :kind" line, the comment lines right above it (its doc),
// and its SQL up to the ";" that ends it. A family of variants and a shared
// fragment are written once (see expandVariants and include); Parse renders
// every query as it is sent but for its parameters, which keep their names
// (@name, sqlc.arg(name), sqlc.narg(name)). The generator (dbgen) and the
// drivers' plan tests read the queries through it.
package querytext

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Query is one query of a query file, rendered.
type Query struct {
	Name string // TaskList, TaskListIDDesc
	Kind string // :one, :many, :exec, :execrows, :execlastid, :batchone, :batchexec
	Doc  []string
	File string // the file's base name
	Text string // the SQL, without its ";"
}

// ReadDir reads the queries of the .sql files of dir but schema.sql, in
// name order.
func ReadDir(dir string) ([]Query, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.sql"))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []Query
	for _, name := range names {
		if filepath.Base(name) == "schema.sql" {
			continue
		}
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		qs, err := Parse(filepath.Base(name), string(b))
		if err != nil {
			return nil, err
		}
		out = append(out, qs...)
	}
	return out, nil
}

// Parse splits the text of the query file named file into its queries.
func Parse(file, text string) ([]Query, error) {
	lines := strings.SplitAfter(text, "\n")
	var out []Query
	var cur *Query
	var body strings.Builder
	fragments := map[string]string{}
	var comments []string // the comment lines since the last blank or SQL line
	flush := func() error {
		if cur == nil {
			return nil
		}
		sql := strings.TrimSpace(body.String())
		sql = strings.TrimSuffix(sql, ";")
		if cur.Kind == "fragment" {
			fragments[cur.Name] = sql
			cur = nil
			body.Reset()
			return nil
		}
		sql, err := include(sql, fragments)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", file, cur.Name, err)
		}
		qs, err := expandVariants(cur, sql)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", file, cur.Name, err)
		}
		out = append(out, qs...)
		cur = nil
		body.Reset()
		return nil
	}
	for _, line := range lines {
		trimmed := strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(trimmed, "-- fragment:"); ok {
			if err := flush(); err != nil {
				return nil, err
			}
			cur = &Query{Name: strings.TrimSpace(rest), Kind: "fragment", File: file}
			comments = nil
			continue
		}
		if rest, ok := strings.CutPrefix(trimmed, "-- name:"); ok {
			if err := flush(); err != nil {
				return nil, err
			}
			f := strings.Fields(rest)
			if len(f) != 2 || !strings.HasPrefix(f[1], ":") {
				return nil, fmt.Errorf("%s: malformed %q", file, trimmed)
			}
			cur = &Query{Name: f[0], Kind: f[1], File: file, Doc: comments}
			comments = nil
			continue
		}
		switch {
		case strings.HasPrefix(trimmed, "--"):
			// A comment after a query's SQL ends belongs to the next one;
			// inside the SQL (before its end) it stays in the SQL.
			if cur != nil && !strings.HasSuffix(strings.TrimSpace(body.String()), ";") && strings.TrimSpace(body.String()) != "" {
				body.WriteString(line)
				continue
			}
			if cur != nil && strings.TrimSpace(body.String()) == "" {
				// Comments between the name line and the SQL: the doc too.
				cur.Doc = append(cur.Doc, strings.TrimSpace(strings.TrimPrefix(trimmed, "--")))
				continue
			}
			comments = append(comments, strings.TrimSpace(strings.TrimPrefix(trimmed, "--")))
		case trimmed == "":
			comments = nil
			if cur != nil {
				body.WriteString(line)
			}
		default:
			if cur == nil {
				return nil, fmt.Errorf("%s: SQL before the first -- name: line: %q", file, trimmed)
			}
			body.WriteString(line)
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// A part of SQL several queries share is written once in their file, a
// fragment: a "-- fragment: name" line, then its text up to a ";" (not
// included), above the queries that use it; /*include name*/ in a query
// stands for it.
var includeMarker = regexp.MustCompile(`/\*include ([A-Za-z_]+)\*/`)

// include replaces each /*include name*/ of sql by the fragment's text.
func include(sql string, fragments map[string]string) (string, error) {
	var missing []string
	out := includeMarker.ReplaceAllStringFunc(sql, func(m string) string {
		name := includeMarker.FindStringSubmatch(m)[1]
		text, ok := fragments[name]
		if !ok {
			missing = append(missing, name)
		}
		return text
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("/*include %s*/: no fragment of that name above it", missing[0])
	}
	return out, nil
}

// A query may stand for a family of variants, written once: a
// "-- variants: A B …" line among its doc makes the query Name and one
// query NameA, NameB, … more, each its own statement (its own plan, and
// the plan tests' subject). In the text,
//
//	/*if A B*/ … /*elif C*/ … /*else*/ … /*end*/
//
// keeps, for each variant, the part its name selects (else: the query
// itself and every variant not named), and /*lock*/ is the row lock of a
// lock variant: FOR UPDATE (ForUpdate), FOR UPDATE SKIP LOCKED
// (ForUpdateSkip), FOR SHARE (ForShare), nothing for any other.
var locks = map[string]string{"ForUpdate": "FOR UPDATE", "ForUpdateSkip": "FOR UPDATE SKIP LOCKED", "ForShare": "FOR SHARE"}

// marker matches the variant markers.
var marker = regexp.MustCompile(`/\*(if [A-Za-z ]+|elif [A-Za-z ]+|else|end|lock)\*/`)

// expandVariants renders q's family from its text sql: q itself, then each
// variant its doc declares.
func expandVariants(q *Query, sql string) ([]Query, error) {
	variants := []string{""}
	var doc []string
	for _, line := range q.Doc {
		if rest, ok := strings.CutPrefix(line, "variants:"); ok {
			variants = append(variants, strings.Fields(rest)...)
			continue
		}
		doc = append(doc, line)
	}
	var out []Query
	for _, v := range variants {
		text, err := renderVariant(sql, v, len(variants) > 1)
		if err != nil {
			return nil, err
		}
		out = append(out, Query{Name: q.Name + v, Kind: q.Kind, Doc: doc, File: q.File, Text: text})
	}
	return out, nil
}

// renderVariant is sql as variant v (the query itself for "") has it.
func renderVariant(sql, v string, family bool) (string, error) {
	var b strings.Builder
	// keep: whether the text at hand is v's; chosen: whether a branch of
	// the current if was v's; in: inside an if.
	keep, chosen, in := true, false, false
	last := 0
	for _, m := range marker.FindAllStringSubmatchIndex(sql, -1) {
		if keep {
			b.WriteString(sql[last:m[0]])
		}
		last = m[1]
		word := sql[m[2]:m[3]]
		cmd, names, _ := strings.Cut(word, " ")
		if (cmd == "if" || cmd == "elif") && !family {
			return "", fmt.Errorf("/*%s*/ in a query that declares no variants", word)
		}
		switch cmd {
		case "if":
			if in {
				return "", fmt.Errorf("/*if*/ inside /*if*/")
			}
			in = true
			chosen = slices.Contains(strings.Fields(names), v) && v != ""
			keep = chosen
		case "elif":
			if !in {
				return "", fmt.Errorf("/*elif*/ outside /*if*/")
			}
			match := !chosen && slices.Contains(strings.Fields(names), v) && v != ""
			chosen = chosen || match
			keep = match
		case "else":
			if !in {
				return "", fmt.Errorf("/*else*/ outside /*if*/")
			}
			keep = !chosen
			chosen = true
		case "end":
			if !in {
				return "", fmt.Errorf("/*end*/ outside /*if*/")
			}
			in, keep = false, true
		case "lock":
			if keep {
				b.WriteString(locks[v])
			}
		}
	}
	if in {
		return "", fmt.Errorf("/*if*/ without /*end*/")
	}
	b.WriteString(sql[last:])
	return b.String(), nil
}
