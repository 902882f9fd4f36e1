package agents_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cks-dev/cks/internal/agents"
)

// TestExecCheck: a command whose program exists and may be run passes; a
// path that names nothing, a file that may not be run and a name not on
// $PATH are refused, naming the program and why.
func TestExecCheck(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	notExec := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notExec, []byte("hi"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cmd  []string
		want []string // nil: accepted
	}{
		{[]string{"true"}, nil},
		{[]string{"sh", "-c", "cat"}, nil},
		{[]string{script, "arg"}, nil},
		{[]string{"./nope"}, []string{`command "./nope" cannot be run`, "working directory", "no such file or directory"}},
		{[]string{filepath.Join(dir, "missing.sh")}, []string{"missing.sh", "no such file or directory"}},
		{[]string{notExec}, []string{"notes.txt", "permission denied"}},
		{[]string{"cks-no-such-program-anywhere"}, []string{`"cks-no-such-program-anywhere"`, "$PATH", "not found"}},
		{nil, []string{"no command"}},
	} {
		err := agents.ExecConfig{Command: c.cmd}.Check()
		switch {
		case c.want == nil && err != nil:
			t.Errorf("Check(%q) = %v, want nil", c.cmd, err)
		case c.want != nil && err == nil:
			t.Errorf("Check(%q) = nil, want a refusal", c.cmd)
		}
		for _, w := range c.want {
			if err != nil && !strings.Contains(err.Error(), w) {
				t.Errorf("Check(%q) = %q, lacks %q", c.cmd, err, w)
			}
		}
	}
}
