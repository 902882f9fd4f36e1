package jsonlines_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cks-dev/cks/internal/base/jsonlines"
)

// TestAppend: records land one JSON line each, after what the file held,
// in a file (and directory) created private; a record JSON cannot encode
// is an error naming it.
func TestAppend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "archive", "x.jsonl")
	type rec struct {
		N int `json:"n"`
	}
	if err := jsonlines.Append(path, []rec{{1}, {2}}); err != nil {
		t.Fatal(err)
	}
	if err := jsonlines.Append(path, []rec{{3}}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n"; got != want {
		t.Fatalf("file %q, want %q", got, want)
	}
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, %v; want %v", p, fi.Mode().Perm(), err, want)
		}
	}
	if err := jsonlines.Append(path, []any{func() {}}); err == nil {
		t.Fatal("a func encoded")
	}
}

// TestAppendCutsTornLine (issue 38.7): a file whose last line a crashed
// Append left without its newline has that torn line cut off before the
// new lines are written, however long it is, so every line of the file is
// one record of valid JSON (on main the next line was appended onto it).
func TestAppendCutsTornLine(t *testing.T) {
	long := strings.Repeat("x", 200<<10)
	for _, c := range []struct{ name, before, after string }{
		{"empty", "", `{"n":3}` + "\n"},
		{"whole", `{"n":1}` + "\n", `{"n":1}` + "\n" + `{"n":3}` + "\n"},
		{"torn second line", `{"n":1}` + "\n" + `{"n":2`, `{"n":1}` + "\n" + `{"n":3}` + "\n"},
		{"torn only line", `{"n":2`, `{"n":3}` + "\n"},
		{"torn line longer than a read", `{"n":1}` + "\n" + `{"s":"` + long, `{"n":1}` + "\n" + `{"n":3}` + "\n"},
		{"torn long file", `{"s":"` + long + `"}` + "\n" + `{"n":2`, `{"s":"` + long + `"}` + "\n" + `{"n":3}` + "\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.jsonl")
			if err := os.WriteFile(path, []byte(c.before), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := jsonlines.Append(path, []map[string]int{{"n": 3}}); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != c.after {
				t.Fatalf("after the append the file holds %.80q…, want %.80q…", b, c.after)
			}
			wantLinesJSON(t, b)
		})
	}
}

// wantLinesJSON fails t unless every line of b is valid JSON and b ends in
// a newline.
func wantLinesJSON(t *testing.T, b []byte) {
	t.Helper()
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Fatalf("the file does not end in a newline: …%q", b[max(0, len(b)-40):])
	}
	for i, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		if !json.Valid(line) {
			t.Fatalf("line %d is not valid JSON: %.120q", i+1, line)
		}
	}
}

// blocker is a record whose encoding tells the test it has begun (a line
// on stdout) and then never ends: the process appending it is killed
// while the records before it are partly written.
type blocker struct{}

func (blocker) MarshalJSON() ([]byte, error) {
	fmt.Println("encoding")
	select {}
}

// TestAppendKilledMidway (issue 38.7): a process killed (SIGKILL) in the
// middle of an Append leaves a torn line — its second record is 5,000
// bytes, so the writer's 4 KiB buffer has put the first and part of the
// second in the file when the third record's encoding blocks and the
// process is killed; the next Append cuts the torn line off, and the file
// is whole lines of JSON. No sleep: the test kills the child once it says
// it is encoding.
func TestAppendKilledMidway(t *testing.T) {
	if path := os.Getenv("CKS_JSONLINES_APPEND"); path != "" {
		jsonlines.Append(path, []any{map[string]int{"n": 2}, map[string]string{"s": strings.Repeat("y", 5000)}, blocker{}}) //nolint:errcheck // killed before it returns
		return
	}
	path := filepath.Join(t.TempDir(), "x.jsonl")
	if err := jsonlines.Append(path, []map[string]int{{"n": 1}}); err != nil {
		t.Fatal(err)
	}
	child := exec.Command(os.Args[0], "-test.run=^TestAppendKilledMidway$")
	child.Env = append(os.Environ(), "CKS_JSONLINES_APPEND="+path)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	child.Process.Kill()
	child.Wait()
	if err != nil || line != "encoding\n" {
		t.Fatalf("the child said %q, %v; want encoding", line, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if whole := `{"n":1}` + "\n" + `{"n":2}` + "\n"; !strings.HasPrefix(string(b), whole) || len(b) == len(whole) || b[len(b)-1] == '\n' {
		t.Fatalf("the killed append left %d bytes: %.40q…%q; want two whole lines and a torn one", len(b), b, b[len(b)-1:])
	}
	if err := jsonlines.Append(path, []map[string]int{{"n": 3}}); err != nil {
		t.Fatal(err)
	}
	if b, _ = os.ReadFile(path); string(b) != `{"n":1}`+"\n"+`{"n":2}`+"\n"+`{"n":3}`+"\n" {
		t.Fatalf("after the next append the file holds %.80q", b)
	}
	wantLinesJSON(t, b)
}
