package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// completionScript is `cks completion SHELL`'s output, run in-process.
func completionScript(t testing.TB, shell string) string {
	t.Helper()
	var out, errb bytes.Buffer
	e := env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	if code := run(context.Background(), []string{"completion", shell}, e); code != 0 {
		t.Fatalf("cks completion %s: exit %d: %s", shell, code, errb.String())
	}
	return out.String()
}

// TestCompletionBash sources the bash completion in a real bash and
// completes command lines: a command, a group's subcommand, an agent's
// kind, and the flags of a command of the table and of a hand-written one.
func TestCompletionBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	script := filepath.Join(t.TempDir(), "cks.bash")
	if err := os.WriteFile(script, []byte(completionScript(t, "bash")), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		line string // the words; the last is being completed
		want string
	}{
		{"cks pro", "process"},
		{"cks task cr", "create"},
		{"cks task create --cri", "--criteria"},
		{"cks agent fork", "fork_resolution"},
		{"cks agent exec --ty", "--types"},
		{"cks serve --li", "--listen"},
		{"cks doctor --da", "--data-dir --database"},
		{"cks completion z", "zsh"},
		{"cks config --", "--data-dir --json"},
		{"cks version --", ""},
	}
	for _, c := range cases {
		t.Run(c.line, func(t *testing.T) {
			words := strings.Fields(c.line)
			if strings.HasSuffix(c.line, " ") {
				words = append(words, "")
			}
			prog := `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _cks; echo "${COMPREPLY[*]}"`
			out, err := exec.Command(bash, append([]string{"-c", prog, "bash", script}, words...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if got := strings.TrimSpace(string(out)); got != c.want {
				t.Fatalf("completing %q: %q, want %q", c.line, got, c.want)
			}
		})
	}
}

// TestCompletionShells: each shell's script names every command and every
// flag help knows, and parses in its shell when that shell is installed.
func TestCompletionShells(t *testing.T) {
	top, subs, entries := completionTree()
	for _, sh := range []string{"bash", "zsh", "fish"} {
		t.Run(sh, func(t *testing.T) {
			s := completionScript(t, sh)
			for _, c := range top {
				if !strings.Contains(s, " "+c+" ") && !strings.Contains(s, `"`+c+" ") && !strings.Contains(s, " "+c+`"`) {
					t.Errorf("%s completion lacks the command %s", sh, c)
				}
				for _, w := range subs[c] {
					if !strings.Contains(s, w) {
						t.Errorf("%s completion lacks %s %s", sh, c, w)
					}
				}
			}
			for _, en := range entries {
				for _, f := range en.flags {
					want := f
					if sh == "fish" {
						want = "-l " + strings.TrimPrefix(f, "--")
					}
					if !strings.Contains(s, want) {
						t.Errorf("%s completion lacks %v %s", sh, en.words, f)
					}
				}
			}
			if bin, err := exec.LookPath(sh); err == nil {
				f := filepath.Join(t.TempDir(), "cks."+sh)
				if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
					t.Fatal(err)
				}
				if out, err := exec.Command(bin, "-n", f).CombinedOutput(); err != nil {
					t.Fatalf("%s -n: %v: %s", sh, err, out)
				}
			}
		})
	}
	if len(entries) < 40 {
		t.Fatalf("only %d commands completed", len(entries))
	}
}
