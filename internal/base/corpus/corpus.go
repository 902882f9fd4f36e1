// Package corpus is the corpus shipped with cks (see README.md): Markdown
// about cks itself, embedded so that `cks research` works on a fresh
// machine. Load it with llm.LoadCorpusFS(corpus.FS, ".").
package corpus

import "embed"

// FS holds the corpus files (and README.md, which the loader skips).
//
//go:embed *.md
var FS embed.FS
