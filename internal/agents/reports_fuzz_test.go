package agents

import (
	"testing"

	"github.com/cks-dev/cks"
)

// FuzzParseReport: a line of an exec command's reports pipe is either a
// report of costs ParseCost accepts or an error; never a panic.
func FuzzParseReport(f *testing.F) {
	for _, s := range []string{`{"usage":{"model":"gpt-5","input_tokens":60,"output_tokens":10,"cost":"0.01"}}`,
		`{"usage":{}}`, `{}`, `not a report`, `{"usage":{"cost":"1e3"}}`, `{"usage":{"input_tokens":-1}}`, `{"other":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		u, err := parseReport(line)
		if err != nil {
			return
		}
		if _, perr := cks.ParseCost("cost", u.Cost.String()); perr != nil {
			t.Fatalf("%q: accepted a cost %s that does not read back: %v", line, u.Cost, perr)
		}
	})
}
