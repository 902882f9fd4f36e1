package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/internal/base/datadir"
	"github.com/cks-dev/cks/internal/ops"
)

// clientFlags are the flags of commands that talk to a hub.
type clientFlags struct {
	url, token, dataDir string
	json                bool
}

func (f *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.url, "url", "", "hub `URL` (env CKS_URL; default from the data directory)")
	fs.StringVar(&f.token, "token", "", "bearer `TOKEN` (env CKS_TOKEN; default the data directory's admin token, for its hub)")
	fs.StringVar(&f.dataDir, "data-dir", "", "data directory `DIR` of a local hub (env CKS_DATA_DIR; default the nearest "+datadir.Default+" here or above)")
	fs.BoolVar(&f.json, "json", false, "print JSON instead of a table")
}

func (f *clientFlags) client(e env) (*client.Client, error) {
	dir := dataDir(f.dataDir, e)
	loc := e.common()
	url, tok, err := client.Discover(or(f.url, loc.URL), or(f.token, loc.Token), dir)
	if err != nil {
		return nil, err
	}
	return client.New(url, tok), nil
}

// processGroup is `cks process`: the standalone agent processes. There is
// no start: cks cannot launch an agent process (ADR-016 §4). list and
// status read the data directory's store when no hub answers, so the
// final states stay readable once `cks dev` has exited.
var processGroup = group{name: "process", commands: []command{
	opCommand("list", ops.ListProcesses, opSpec[cks.ListProcessesInput, cks.ProcessList]{
		table: func(x *reply[cks.ListProcessesInput, cks.ProcessList]) error {
			if err := printProcesses(x.w, x.out.Processes); err != nil {
				return err
			}
			if x.out.Next != "" {
				fmt.Fprintf(x.w, "more: --cursor %s\n", x.out.Next)
			}
			return nil
		},
		offline: true,
	}),
	opCommand("status", ops.ProcessStatus, opSpec[cks.ProcessInput, cks.Process]{
		offline: true,
		table: func(x *reply[cks.ProcessInput, cks.Process]) error {
			if x.out.Status == cks.ProcessNotFound {
				_, err := fmt.Fprintf(x.w, "no %s process has ever reported\n", x.out.ProcessKind)
				return err
			}
			return printProcesses(x.w, []cks.Process{x.out})
		},
	}),
	opCommand("stop", ops.RequestProcessStop, opSpec[cks.ProcessInput, cks.ProcessStopResult]{
		in: inputSpec{metas: map[string]string{"process_kind": "KIND|ID"}},
		table: func(x *reply[cks.ProcessInput, cks.ProcessStopResult]) error {
			printStopResult(x.w, x.in.ProcessKind, x.out)
			return nil
		},
	}),
	// report: a heartbeat from a script; an agent in another language
	// calls report_process itself (or its SDK does).
	opCommand("report", ops.ReportProcess, opSpec[cks.ReportProcessInput, cks.Process]{
		table: func(x *reply[cks.ReportProcessInput, cks.Process]) error {
			if err := printProcesses(x.w, []cks.Process{x.out}); err != nil {
				return err
			}
			if x.out.DesiredState == cks.DesiredStopRequested {
				_, err := fmt.Fprintln(x.w, "stop requested: finish the task in hand and report --exited")
				return err
			}
			return nil
		},
	}),
}}

// printStopResult says what a stop request did, for people.
func printStopResult(w io.Writer, target string, res cks.ProcessStopResult) {
	kind := or(res.ProcessKind, target)
	switch {
	case !res.Found && res.InstanceID != "" && res.InstanceID == target:
		fmt.Fprintf(w, "%s instance %s is not alive: nothing to stop\n", kind, res.InstanceID)
		return
	case !res.Found:
		fmt.Fprintf(w, "no alive %s process: nothing to stop\n", kind)
		return
	}
	fmt.Fprintf(w, "stop requested: %s instance %s; it finishes its current task and exits\n", kind, res.InstanceID)
}

// printJSON writes v indented for a person, with <, > and & as they are.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func printProcesses(w io.Writer, ps []cks.Process) error {
	if len(ps) == 0 {
		fmt.Fprintln(w, "no agent processes have reported")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tINSTANCE\tHOST\tPID\tSTATUS\tLAST HEARTBEAT\tTASK\tCLAIMS")
	for _, p := range ps {
		task := "idle"
		if p.CurrentTaskID != nil {
			task = fmt.Sprintf("#%d %s", *p.CurrentTaskID, p.CurrentTaskType)
		}
		last := age(time.Duration(p.HeartbeatAgeS*float64(time.Second))) + " ago"
		if !p.ExitedAt.IsZero() {
			// A graceful exit (ADR-016 §3): its time, by the hub's clock as
			// the heartbeat's age is.
			exited := p.HeartbeatAgeS - p.ExitedAt.Sub(p.LastHeartbeatAt).Seconds()
			last = "exited " + age(time.Duration(exited*float64(time.Second))) + " ago"
		}
		claims := strings.Join(p.TaskTypes, ",")
		if claims == "" {
			claims = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", p.ProcessKind, short(p.InstanceID), p.Hostname, p.PID,
			p.Status, last, task, claims)
	}
	return tw.Flush()
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}
