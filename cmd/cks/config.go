package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/base/datadir"
	"github.com/cks-dev/cks/internal/config"
)

// The configuration of cks is one table (config.Table): every environment
// variable and configuration flag of the hub, the agents and the CLI, with
// its default, meaning and readers, and the parsers that read them
// (internal/config). config_test.go holds the commands' flags to the
// table: a configuration flag of a command the table lacks fails it, and
// so does a flag the table gives a command that does not have it, or a
// default the table says that the flag set does not apply. `cks config`
// prints the effective values through the same parsers;
// docs/configuration.md is generated from the table (config.Markdown).

// configEntry is one row of `cks config --json`.
type configEntry struct {
	Env     string   `json:"env,omitempty"`
	Flag    string   `json:"flag,omitempty"`
	Value   string   `json:"value"`
	Source  string   `json:"source"`
	Default string   `json:"default"`
	Secret  bool     `json:"secret,omitempty"`
	Readers []string `json:"readers"`
	Meaning string   `json:"meaning"`
}

// configReport is `cks config --json`.
type configReport struct {
	DataDir  string        `json:"data_dir"`
	Settings []configEntry `json:"settings"`
	Errors   []string      `json:"errors"`
}

// effectiveConfig is the configuration getenv makes: each variable's
// effective value (secrets as set/unset, a database URL's password
// redacted) and where it came from.
func effectiveConfig(getenv func(string) string, dir datadir.Dir) configReport {
	v := config.Parse(getenv)
	r := configReport{DataDir: string(dir), Settings: []configEntry{}, Errors: []string{}}
	for _, err := range v.Errs {
		r.Errors = append(r.Errors, err.Error())
	}
	for _, s := range config.Table() {
		if s.Env == "" || s.Test {
			continue // a flag only: one command line's, not this host's; or a test's hook
		}
		e := configEntry{Env: s.Env, Flag: s.Flag, Source: s.Source(v), Default: s.DefaultOf(), Secret: s.Secret,
			Readers: s.Readers, Meaning: s.Doc, Value: s.Effective(v, backend.RedactURL)}
		if s.Env == config.EnvDataDir {
			e.Value = string(dir)
		}
		r.Settings = append(r.Settings, e)
	}
	return r
}

// errConfig marks a configuration a parser refuses.
var errConfig = errors.New("bad configuration")

// cmdConfig is `cks config`: the effective configuration of this host's
// environment, through the parsers of the hub and the agents.
func cmdConfig(_ context.Context, args []string, e env) error {
	fs := flagSet("config", e)
	dirFlag := fs.String("data-dir", "", "data directory `DIR` (env CKS_DATA_DIR; default the nearest "+datadir.Default+" here or above)")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	if err := noArgs(fs, args); err != nil {
		return err
	}
	r := effectiveConfig(e.getenv, dataDir(*dirFlag, e))
	if *asJSON {
		if err := printJSON(e.stdout, r); err != nil {
			return err
		}
	} else {
		printConfig(e.stdout, r)
	}
	if len(r.Errors) > 0 {
		return fmt.Errorf("%w: %s", errConfig, strings.Join(r.Errors, "; "))
	}
	return nil
}

func printConfig(w io.Writer, r configReport) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VARIABLE\tFLAG\tVALUE\tSOURCE")
	for _, s := range r.Settings {
		fl := ""
		if s.Flag != "" {
			fl = "--" + s.Flag
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Env, fl, s.Value, s.Source)
	}
	tw.Flush()
}
