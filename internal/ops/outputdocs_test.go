package ops

import (
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// TestOutputsDescribed: every property of every MCP tool's output schema,
// nested ones included, has a description (the tools' output contract says
// what each field means, not only its type), and outputDocs holds no entry
// no output uses.
func TestOutputsDescribed(t *testing.T) {
	used := map[string]bool{}
	var walk func(op, path string, s *jsonschema.Schema)
	walk = func(op, path string, s *jsonschema.Schema) {
		if s == nil {
			return
		}
		for name, p := range s.Properties {
			if p.Description == "" {
				t.Errorf("%s: output property %s%s has no description (add it to outputDocs)", op, path, name)
			}
			for k, d := range outputDocs {
				if d == p.Description && (k == name || strings.HasSuffix(k, "."+name)) {
					used[k] = true
				}
			}
			walk(op, path+name+".", p)
		}
		for _, b := range s.AnyOf {
			walk(op, path, b)
		}
		walk(op, path+"[].", s.Items)
		walk(op, path+"{}.", s.AdditionalProperties)
	}
	for _, op := range All() {
		if op.Spec().Surfaces&MCP != 0 {
			walk(op.Spec().Name, "", op.OutputSchema())
		}
	}
	for k := range outputDocs {
		if !used[k] {
			t.Errorf("outputDocs[%q] describes no output property", k)
		}
	}
}
