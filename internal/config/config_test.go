package config_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cks-dev/cks/internal/config"
)

// notSettingNames are CKS_ names in the source that configure nothing: what an
// exec agent hands its command (its reports pipe included), the exec
// guard's marker, the tests' database, pooler and OTLP receiver, the
// early-signal test's marker (package shutdown).
var notSettingNames = []string{"CKS_TASK_ID", "CKS_TASK_TYPE", "CKS_TASK_ATTEMPT", "CKS_TASK_RESTART", "CKS_TASK_REVISION",
	"CKS_REPORT_FD", "CKS_EXEC_GUARD", "CKS_TEST_DATABASE_URL", "CKS_TEST_POOLER_URL", "CKS_TEST_SIGNALS_READY", "CKS_OTELCOL"}

// sourceNames are the CKS_ names written in the module's non-test Go
// source outside this package (prefixes such as CKS_CRITIC_ left out).
func sourceNames(t testing.TB) map[string]bool {
	t.Helper()
	re := regexp.MustCompile(`"(CKS_[A-Z0-9_]*[A-Z0-9])[="]`)
	names := map[string]bool{}
	err := filepath.WalkDir(moduleRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(moduleRoot, path)
		if d.IsDir() && rel != "." && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || filepath.ToSlash(rel) == "internal/config") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			names[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestTableMatchesParsers: the table names every variable the parsers
// read (run with a recording environment that takes every branch) and
// every CKS_ name in the source, and names none that no parser reads; each
// row has a name, a meaning and its readers.
func TestTableMatchesParsers(t *testing.T) {
	read := map[string]bool{}
	values := map[string]string{config.EnvLLMProvider: "openai", config.EnvLLMModel: "m"} // reach every LLM variable
	record := func(k string) string { read[k] = true; return values[k] }
	if v := config.Parse(record); len(v.Errs) > 0 {
		t.Fatalf("the recording environment is refused: %v", v.Errs)
	}
	if _, err := config.ParseTestClock(record); err != nil {
		t.Fatal(err)
	}
	inTable := map[string]bool{}
	for _, s := range config.Table() {
		if s.Env != "" {
			if inTable[s.Env] {
				t.Errorf("%s is in the table twice", s.Env)
			}
			inTable[s.Env] = true
		}
		if s.Env == "" && s.Flag == "" || s.Doc == "" || len(s.Readers) == 0 {
			t.Errorf("entry %+v lacks a name, a meaning or its readers", s)
		}
	}
	for name := range read {
		if !inTable[name] {
			t.Errorf("a parser reads %s, which the configuration table lacks", name)
		}
	}
	for name := range sourceNames(t) {
		if !inTable[name] && !slices.Contains(notSettingNames, name) {
			t.Errorf("the source names %s, which the configuration table lacks (or add it to notSettingNames)", name)
		}
	}
	for name := range inTable {
		if !read[name] {
			t.Errorf("the table has %s, which no parser reads", name)
		}
	}
	if len(read) < 70 {
		t.Errorf("the parsers read only %d variables: the recording environment missed them", len(read))
	}
}

// TestDefaults: an empty environment is refused nothing, and its values
// are the defaults the components apply.
func TestDefaults(t *testing.T) {
	v := config.Parse(nil)
	if len(v.Errs) > 0 {
		t.Fatal(v.Errs)
	}
	h := config.DefaultHub()
	if h.Ledger != config.DefaultLedger() || h.LeaderTTL != config.DefaultLeaderTTL || h.Retention != config.DefaultRetention ||
		h.StaleStopThreshold != config.DefaultStaleStopThreshold || len(h.Sweepers) != len(config.DefaultSweepers()) {
		t.Fatalf("DefaultHub() = %+v", h)
	}
	if l := v.LLM; l.Provider != config.ProviderOffline {
		t.Fatalf("LLM = %+v, want the offline model", l)
	}
}
