package main

// The query files: each query is a "-- name: Name :kind" line, the comment
// lines right above it (its doc), and the SQL up to the next query. Their
// text is read as tokens, just enough to number the parameters, expand the
// stars and find what each parameter and result column is.

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"
)

// tokKind is what a tok is.
type tokKind int

const (
	tSpace   tokKind = iota // white space
	tComment                // -- to the end of the line, or /* … */
	tString                 // '…'
	tQuoted                 // "…"
	tNumber
	tWord  // an identifier or a keyword
	tParam // @name, sqlc.arg(name), sqlc.narg(name)
	tPunct // everything else, :: and the two-character comparisons as one
)

type tok struct {
	kind tokKind
	text string
	// name and nullable are a tParam's.
	name     string
	nullable bool
}

// lower is a word's text in lower case ("" for other tokens).
func (t tok) lower() string {
	if t.kind != tWord {
		return ""
	}
	return strings.ToLower(t.text)
}

// lex splits sql into tokens; joined, their texts are sql again but for
// the parameters, which are their names.
func lex(sql string) ([]tok, error) {
	var out []tok
	for i := 0; i < len(sql); {
		c := sql[i]
		rest := sql[i:]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			j := i
			for j < len(sql) && strings.IndexByte(" \t\n\r", sql[j]) >= 0 {
				j++
			}
			out = append(out, tok{kind: tSpace, text: sql[i:j]})
			i = j
		case strings.HasPrefix(rest, "--"):
			j := strings.IndexByte(rest, '\n')
			if j < 0 {
				j = len(rest)
			}
			out = append(out, tok{kind: tComment, text: rest[:j]})
			i += j
		case strings.HasPrefix(rest, "/*"):
			j := strings.Index(rest, "*/")
			if j < 0 {
				return nil, fmt.Errorf("unterminated comment")
			}
			out = append(out, tok{kind: tComment, text: rest[:j+2]})
			i += j + 2
		case c == '\'' || c == '"':
			j := 1
			for {
				k := strings.IndexByte(rest[j:], c)
				if k < 0 {
					return nil, fmt.Errorf("unterminated %c", c)
				}
				j += k + 1
				if j < len(rest) && rest[j] == c { // doubled: an escaped quote
					j++
					continue
				}
				break
			}
			kind := tString
			if c == '"' {
				kind = tQuoted
			}
			out = append(out, tok{kind: kind, text: rest[:j]})
			i += j
		case c == '@':
			j := 1
			for j < len(rest) && isWord(rest[j]) {
				j++
			}
			if j == 1 {
				return nil, fmt.Errorf("@ without a name")
			}
			out = append(out, tok{kind: tParam, text: rest[:j], name: rest[1:j]})
			i += j
		case strings.HasPrefix(strings.ToLower(rest), "sqlc.arg(") || strings.HasPrefix(strings.ToLower(rest), "sqlc.narg("):
			open := strings.IndexByte(rest, '(')
			end := strings.IndexByte(rest, ')')
			if end < 0 {
				return nil, fmt.Errorf("unterminated %s", rest[:open])
			}
			out = append(out, tok{kind: tParam, text: rest[:end+1], name: strings.TrimSpace(rest[open+1 : end]),
				nullable: strings.HasPrefix(strings.ToLower(rest), "sqlc.narg(")})
			i += end + 1
		case c >= '0' && c <= '9':
			j := 0
			for j < len(rest) && (rest[j] >= '0' && rest[j] <= '9' || rest[j] == '.') {
				j++
			}
			out = append(out, tok{kind: tNumber, text: rest[:j]})
			i += j
		case isWord(c):
			j := 0
			for j < len(rest) && isWord(rest[j]) {
				j++
			}
			out = append(out, tok{kind: tWord, text: rest[:j]})
			i += j
		default:
			n := 1
			for _, two := range []string{"::", "<=", ">=", "<>", "!=", "||", "->"} {
				if strings.HasPrefix(rest, two) {
					n = 2
					break
				}
			}
			if strings.HasPrefix(rest, "->>") {
				n = 3
			}
			out = append(out, tok{kind: tPunct, text: rest[:n]})
			i += n
		}
	}
	return out, nil
}

func isWord(c byte) bool {
	return c == '_' || c < 0x80 && (unicode.IsLetter(rune(c)) || unicode.IsDigit(rune(c)))
}

// sqlQuery is one query of a query file.
type sqlQuery struct {
	name string // TaskList
	kind string // :one, :many, :exec, :execrows, :batchone, :batchexec
	doc  []string
	file string // the file's base name
	toks []tok
}

// readQueryFiles reads the .sql files of dir but schema.sql, in name order.
func readQueryFiles(dir string) ([]*sqlQuery, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.sql"))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []*sqlQuery
	for _, name := range names {
		if filepath.Base(name) == "schema.sql" {
			continue
		}
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		qs, err := parseQueryFile(filepath.Base(name), string(b))
		if err != nil {
			return nil, err
		}
		out = append(out, qs...)
	}
	return out, nil
}

// parseQueryFile splits a query file's text into its queries.
func parseQueryFile(file, text string) ([]*sqlQuery, error) {
	lines := strings.SplitAfter(text, "\n")
	var out []*sqlQuery
	var cur *sqlQuery
	var body strings.Builder
	var comments []string // the comment lines since the last blank or SQL line
	flush := func() error {
		if cur == nil {
			return nil
		}
		sql := strings.TrimSpace(body.String())
		sql = strings.TrimSuffix(sql, ";")
		toks, err := lex(sql)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", file, cur.name, err)
		}
		cur.toks = toks
		out = append(out, cur)
		cur = nil
		body.Reset()
		return nil
	}
	for _, line := range lines {
		trimmed := strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(trimmed, "-- name:"); ok {
			if err := flush(); err != nil {
				return nil, err
			}
			f := strings.Fields(rest)
			if len(f) != 2 || !strings.HasPrefix(f[1], ":") {
				return nil, fmt.Errorf("%s: malformed %q", file, trimmed)
			}
			cur = &sqlQuery{name: f[0], kind: f[1], file: file, doc: comments}
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
				cur.doc = append(cur.doc, strings.TrimSpace(strings.TrimPrefix(trimmed, "--")))
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
