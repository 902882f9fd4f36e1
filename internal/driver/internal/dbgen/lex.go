package main

// A query's text is read as tokens, just enough to number the parameters,
// expand the stars and find what each parameter and result column is.

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/cks-dev/cks/internal/driver/internal/querytext"
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
	out, err := lexTokens(sql)
	if err != nil {
		return nil, err
	}
	depth := 0
	for _, t := range out {
		switch t.text {
		case "(":
			depth++
		case ")":
			if depth--; depth < 0 {
				return nil, fmt.Errorf("a ) without its (")
			}
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("a ( without its )")
	}
	return out, nil
}

// lexTokens splits sql into tokens.
func lexTokens(sql string) ([]tok, error) {
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

// sqlQuery is one query of a query file, as tokens.
type sqlQuery struct {
	name string // TaskList
	kind string // :one, :many, :exec, :execrows, :execlastid, :batchone, :batchexec
	doc  []string
	file string // the file's base name
	toks []tok
}

// readQueryFiles reads the queries of the .sql files of dir (querytext).
func readQueryFiles(dir string) ([]*sqlQuery, error) {
	qs, err := querytext.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	return lexQueries(qs)
}

// parseQueryFile reads the queries of one query file's text.
func parseQueryFile(file, text string) ([]*sqlQuery, error) {
	qs, err := querytext.Parse(file, text)
	if err != nil {
		return nil, err
	}
	return lexQueries(qs)
}

func lexQueries(qs []querytext.Query) ([]*sqlQuery, error) {
	var out []*sqlQuery
	for _, q := range qs {
		toks, err := lex(q.Text)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", q.File, q.Name, err)
		}
		out = append(out, &sqlQuery{name: q.Name, kind: q.Kind, doc: q.Doc, file: q.File, toks: toks})
	}
	return out, nil
}
