package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/base/datadir"
	"github.com/cks-dev/cks/internal/config"
)

// `cks doctor` checks a deployment, one finding per check, in this order:
// the database (reachable, writable), its schema, the clock skew between
// this host and the database, the hub (reachable, healthy), the token, the
// maintenance leader, the agents, and the stored values against today's
// bounds. Each failed finding says how to fix it; the command exits with
// the status of the first failed finding (doctorChecks), 0 when none
// failed. A check that cannot run because an earlier one failed, or that
// has nothing to check (no database reachable from this host), is skipped.

// doctorCheck is one check of doctor and the exit status its failure means.
type doctorCheck struct {
	name string
	exit int
	what string
}

// doctorChecks are doctor's checks, in order, with their exit statuses
// (documented in cks --help and docs/operations.md).
var doctorChecks = []doctorCheck{
	{"database", 10, "the database is reachable and takes writes"},
	{"schema", 11, "the database's schema is this cks's"},
	{"clock", 12, "this host's clock is within " + maxSkew.String() + " of the database's"},
	{"hub", 13, "the hub answers /healthz and its storage is ok"},
	{"token", 14, "the token is valid at the hub"},
	{"leader", 15, "a hub holds the maintenance leadership (the lease reaper and the sweepers' passes run)"},
	{"agents", 16, "no kind of agent process that ever reported has its newest instance stopped (none ever reported: a warning)"},
	{"types", 0, "no task type has tasks due for over a minute with no worker to claim them (list_unclaimed_types; only ever a warning)"},
	{"stored", 5, "every stored task and object is within today's bounds"},
}

// maxSkew is the clock skew doctor accepts between this host and the
// database.
const maxSkew = time.Second

// finding is the outcome of one check.
type finding struct {
	Check  string `json:"check"`
	Status string `json:"status"` // ok, warn, fail or skipped
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
	Exit   int    `json:"exit"` // the status its failure means
}

// doctorReport is `cks doctor --json`.
type doctorReport struct {
	Findings []finding       `json:"findings"`
	Stored   cks.StoredCheck `json:"stored"`
	Exit     int             `json:"exit"`
}

// doctorError is a doctor run with a failed finding: its exit status and
// what failed.
type doctorError struct {
	code int
	msg  string
}

func (e *doctorError) Error() string { return e.msg }

// errProblems marks a doctor run that found stored values past a bound
// (exit status 5): the check itself worked.
var errProblems = errors.New("stored values past today's bounds")

// doctorRun collects findings.
type doctorRun struct {
	r *doctorReport
}

func (d *doctorRun) add(check, status, detail, fix string) {
	i := slices.IndexFunc(doctorChecks, func(c doctorCheck) bool { return c.name == check })
	d.r.Findings = append(d.r.Findings, finding{Check: check, Status: status, Detail: detail, Fix: fix, Exit: doctorChecks[i].exit})
}

func (d *doctorRun) ok(check, detail string)        { d.add(check, "ok", detail, "") }
func (d *doctorRun) fail(check, detail, fix string) { d.add(check, "fail", detail, fix) }
func (d *doctorRun) skip(check, why string)         { d.add(check, "skipped", why, "") }

// warn is a finding to read that fails nothing: the exit status stays 0.
func (d *doctorRun) warn(check, detail, advice string) { d.add(check, "warn", detail, advice) }

// cmdDoctor is `cks doctor`.
func cmdDoctor(ctx context.Context, args []string, e env) error {
	fs := flagSet("doctor", e)
	var cf clientFlags
	cf.register(fs)
	database := fs.String("database", "", "database `URL` to check directly (env CKS_DATABASE_URL; default the data directory's cks.db "+
		"when it exists)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("%w: doctor takes no arguments, got %q", errUsage, pos)
	}
	d := &doctorRun{r: &doctorReport{Findings: []finding{}, Stored: cks.StoredCheck{Problems: []cks.StoredProblem{}}}}
	dir := dataDir(cf.dataDir, e)
	d.database(ctx, or(*database, e.common().DatabaseURL), dir, e)
	refused := d.hub(ctx, &cf, e)

	var failed []string
	for _, f := range d.r.Findings {
		if f.Status == "fail" {
			if d.r.Exit == 0 {
				d.r.Exit = f.Exit
			}
			failed = append(failed, f.Check)
		}
	}
	if cf.json {
		if err := printJSON(e.stdout, d.r); err != nil {
			return err
		}
	} else {
		printFindings(e.stdout, d.r)
	}
	switch {
	case refused != nil:
		return refused
	case len(failed) == 0:
		return nil
	case len(failed) == 1 && failed[0] == "stored":
		return &doctorError{5, fmt.Sprintf("%d %v", len(d.r.Stored.Problems), errProblems)}
	}
	msg := "failed: " + strings.Join(failed, ", ")
	if slices.Contains(failed, "stored") {
		msg += fmt.Sprintf(" (%d %v)", len(d.r.Stored.Problems), errProblems)
	}
	return &doctorError{d.r.Exit, msg}
}

// database checks the database directly, when this host names one or
// holds the data directory's file: reachable and writable, its schema,
// the clock skew.
func (d *doctorRun) database(ctx context.Context, dbURL string, dir datadir.Dir, e env) {
	if dbURL == "" {
		if u, _ := offlineStore(dir, env{getenv: func(string) string { return "" }}); u != "" {
			dbURL = u
		}
	}
	if dbURL == "" {
		why := "no database named (--database, CKS_DATABASE_URL) and no " + string(dir) + "/cks.db on this host"
		d.skip("database", why)
		d.skip("schema", why)
		d.skip("clock", why)
		return
	}
	name := backend.RedactURL(dbURL)
	dialect, target, err := backend.ParseURL(dbURL)
	if err == nil && dialect == "sqlite" {
		if _, serr := os.Stat(target); serr != nil {
			err = fmt.Errorf("no database file: %w", serr)
		}
	}
	var st *backend.Backend
	if err == nil {
		octx, cancel := context.WithTimeout(ctx, 15*time.Second)
		st, err = openBackend(octx, dbURL, e)
		cancel()
	}
	if err != nil {
		if strings.Contains(err.Error(), "schema") {
			d.ok("database", name+" is reachable")
			d.fail("schema", err.Error(), "run the cks of the version that wrote the database, or fix what the error names "+
				"(search_path, the role's rights to create in the schema); a hub of this version opens it the same way")
		} else {
			d.fail("database", err.Error(), "start the database, or fix its URL (--database, CKS_DATABASE_URL): "+
				"sqlite:PATH or postgres://USER@HOST:PORT/DB")
			d.skip("schema", "the database did not open")
		}
		d.skip("clock", "the database did not open")
		return
	}
	defer st.Close()
	if err := st.StorageHealth(ctx); err != nil {
		d.fail("database", name+" does not take writes: "+err.Error(), "make it writable: a Postgres hot standby or "+
			"default_transaction_read_only refuses writes; a SQLite file needs write permission on it and its directory, and space")
	} else {
		d.ok("database", name+" ("+st.Dialect()+") is reachable and takes writes")
	}
	d.ok("schema", "the schema is this cks's ("+version+"); an older one is brought up to date when opened, as by a hub")
	d.clock(ctx, st)
}

// clock reports the skew of this host's clock against the database's and
// the correction cks applies to it (backend.Backend.ClockCorrection), and
// checks that the corrected clock reads the database's time.
func (d *doctorRun) clock(ctx context.Context, st *backend.Backend) {
	if _, own, err := st.DatabaseNow(ctx); err != nil {
		d.fail("clock", err.Error(), "check that the database answers queries")
		return
	} else if !own {
		d.ok("clock", "the database is a file of this host: one clock")
		return
	}
	// What is left between the clock cks stamps by and the database's.
	left, err := clock.MeasureOffset(ctx, st.Clock(), backend.ClockSamples, func(ctx context.Context) (time.Time, error) {
		t, _, err := st.DatabaseNow(ctx)
		return t, err
	})
	if err != nil {
		d.fail("clock", err.Error(), "check that the database answers queries")
		return
	}
	skew, corrected := left.Offset, "not corrected ("+config.EnvTestClockCorrection+"=off)"
	if m, ok := st.ClockCorrection(); ok {
		skew += m.Offset
		corrected = fmt.Sprintf("cks corrects it by %s (measured to ±%s), so heartbeats, leases and liveness are on the "+
			"database's clock (the corrected clock reads %s off it)", m.Offset.Round(time.Millisecond),
			(m.RTT / 2).Round(time.Microsecond), absDur(left.Offset).Round(time.Millisecond))
	}
	detail := fmt.Sprintf("this host's clock is %s %s the database's; %s", absDur(skew).Round(time.Millisecond),
		map[bool]string{true: "behind", false: "ahead of"}[skew > 0], corrected)
	if absDur(skew) > maxSkew || absDur(left.Offset) > maxSkew {
		d.fail("clock", detail, "synchronize the clocks of this host and the database's (chrony or systemd-timesyncd): "+
			"cks corrects its own times by the measured offset, but logs and other programs on this host do not")
	} else {
		d.ok("clock", detail)
	}
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// healthBody is what doctor reads of /healthz.
type healthBody struct {
	Status  string `json:"status"`
	Storage string `json:"storage"`
	Message string `json:"message"`
	Version string `json:"version"`
	Leader  *struct {
		ID string `json:"id"`
	} `json:"leader"`
	Pipeline string `json:"pipeline"`
}

// hub checks the hub, the token, the leader, the agents and the stored
// values.
func (d *doctorRun) hub(ctx context.Context, cf *clientFlags, e env) error {
	later := []string{"token", "leader", "agents", "types", "stored"}
	skipRest := func(why string) {
		for _, c := range later {
			d.skip(c, why)
		}
	}
	cl, err := cf.client(e)
	if err != nil && !strings.Contains(err.Error(), "no token") {
		d.fail("hub", err.Error(), "start a hub (cks serve, or the cks-hub unit), or name it: --url or CKS_URL")
		skipRest("no hub")
		return nil
	}
	if err != nil { // a hub URL but no token
		d.hubHealth(ctx, or(cf.url, e.common().URL))
		d.fail("token", err.Error(), "pass --token or set CKS_TOKEN (cks token create on the hub makes one)")
		for _, c := range later[1:] {
			d.skip(c, "no token")
		}
		return nil
	}
	h, ok := d.hubHealth(ctx, cl.BaseURL())
	if !ok {
		skipRest("the hub did not answer")
		return nil
	}
	procs, err := cl.Processes(ctx, cks.ListProcessesInput{Limit: cks.MaxListLimit}) // the live view: each kind's newest and the alive ones
	var ce *cks.Error
	switch {
	case errors.As(err, &ce) && ce.Code == cks.CodeUnauthenticated:
		d.fail("token", "the hub refuses the token: "+err.Error(), "pass a token of this hub (--token, CKS_TOKEN); "+
			"cks token list shows its tokens, cks token create makes one")
		for _, c := range later[1:] {
			d.skip(c, "the token is not valid")
		}
		return nil
	case err != nil && !(errors.As(err, &ce) && ce.Code == cks.CodeForbidden):
		d.fail("token", "list the processes: "+err.Error(), "check the hub's log")
	default:
		d.ok("token", "the hub accepts the token")
	}
	if h.Leader != nil {
		d.ok("leader", "hub "+h.Leader.ID+" holds the maintenance leadership")
	} else {
		d.fail("leader", "no hub holds the maintenance leadership: the lease reaper and the sweepers' passes run nowhere",
			"look at the hubs' logs (leader election errors); a hub takes the leadership within CKS_LEADER_TTL of starting")
	}
	switch {
	case err != nil:
		d.skip("agents", "the token may not list the processes: "+err.Error())
	default:
		d.agents(procs.Processes)
	}
	d.types(ctx, cl)
	return d.stored(ctx, cl, e)
}

// readHealth reads the /healthz of the hub at base.
func readHealth(ctx context.Context, base string) (healthBody, error) {
	var h healthBody
	hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(hctx, http.MethodGet, strings.TrimRight(base, "/")+"/healthz", nil)
	if err != nil {
		return h, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return h, err
	}
	defer resp.Body.Close()
	return h, json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&h)
}

// hubHealth reads the hub's /healthz: the hub finding, and the body.
func (d *doctorRun) hubHealth(ctx context.Context, base string) (healthBody, bool) {
	h, err := readHealth(ctx, base)
	switch {
	case err != nil:
		d.fail("hub", "no answer from "+base+": "+err.Error(), "start the hub (cks serve, or the cks-hub unit), or fix --url / CKS_URL")
		return h, false
	case h.Status != "ok":
		d.fail("hub", fmt.Sprintf("the hub at %s is %s: %s (storage %s)", base, h.Status, h.Message, h.Storage),
			"the hub's database does not take writes: see its log, and run doctor with --database on a host that reaches it")
		return h, true
	}
	d.ok("hub", "the hub at "+base+" answers (version "+h.Version+")")
	return h, true
}

// agents judges the process listing: some process reports, and no kind's
// newest instance has stopped.
func (d *doctorRun) agents(procs []cks.Process) {
	newest := map[string]cks.Process{}
	alive := map[string]int{}
	for _, p := range procs {
		if p.Status == cks.ProcessAlive {
			alive[p.ProcessKind]++
		}
		if n, ok := newest[p.ProcessKind]; !ok || p.LastHeartbeatAt.After(n.LastHeartbeatAt) {
			newest[p.ProcessKind] = p
		}
	}
	if len(newest) == 0 {
		// A warning, not a failure: a fleet of HTTP or MCP agents never
		// reports (only `cks agent KIND` processes do), and a new hub has
		// none yet.
		d.warn("agents", "no agent process has ever reported to this database (agents that call the API or MCP report none)",
			"to run cks's own agents: cks agent KIND (or their cks-agent@KIND units), or cks dev on one machine")
		return
	}
	var down, up []string
	for k, p := range newest {
		if alive[k] == 0 {
			down = append(down, fmt.Sprintf("%s (instance %s, last heartbeat %.0fs ago)", k, p.InstanceID, p.HeartbeatAgeS))
		} else {
			up = append(up, fmt.Sprintf("%s ×%d", k, alive[k]))
		}
	}
	slices.Sort(down)
	slices.Sort(up)
	if len(down) > 0 {
		d.fail("agents", "no instance alive of "+strings.Join(down, ", "), "restart those agents (cks agent KIND, or "+
			"systemctl restart cks-agent@KIND); an agent stopped on purpose stays so until started again")
		return
	}
	d.ok("agents", "alive: "+strings.Join(up, ", "))
}

// types warns of the task types no worker claims: their tasks wait
// forever (list_unclaimed_types).
func (d *doctorRun) types(ctx context.Context, cl *client.Client) {
	u, err := cl.UnclaimedTypes(ctx, cks.UnclaimedTypesInput{})
	if err != nil {
		d.skip("types", "list the unclaimed task types: "+err.Error())
		return
	}
	if u.Total == 0 {
		d.ok("types", "every task type with due tasks has a worker")
		return
	}
	var ts []string
	for _, t := range u.Types {
		ts = append(ts, fmt.Sprintf("%q (%d waiting since %s)", t.Type, t.Waiting, t.Since.Local().Format(time.DateTime)))
	}
	if u.Total > len(u.Types) {
		ts = append(ts, fmt.Sprintf("and %d more", u.Total-len(u.Types)))
	}
	d.warn("types", "no live worker claims "+strings.Join(ts, ", "),
		"start a worker for each (cks agent exec --types TYPE -- COMMAND, or an SDK worker), or check the type's spelling: cks task unclaimed")
}

// stored is the stored-values check (check_stored, page by page; admin on
// /), its progress on stderr.
func (d *doctorRun) stored(ctx context.Context, cl *client.Client, e env) error {
	report := &d.r.Stored
	for _, what := range cks.StoredKinds {
		checked := 0
		for cursor := int64(0); ; {
			page, err := cl.CheckStored(ctx, what, cursor)
			if err != nil {
				if cursor > 0 || checked > 0 {
					fmt.Fprintln(e.stderr)
				}
				var ce *cks.Error
				if errors.As(err, &ce) && ce.Code == cks.CodeForbidden {
					// doctor needs admin on /, as check_stored does: the
					// hub's refusal is the command's (exit 1).
					d.skip("stored", "the token is not admin on /: "+err.Error())
					return err
				}
				d.fail("stored", "check the stored values: "+err.Error(), "check the hub's log")
				return nil
			}
			checked += page.Checked
			report.Checked += page.Checked
			report.Problems = append(report.Problems, page.Problems...)
			fmt.Fprintf(e.stderr, "\rchecked %d %s, %d problems", checked, what, len(report.Problems))
			if cursor = page.Next; cursor == 0 {
				break
			}
		}
		fmt.Fprintln(e.stderr)
	}
	if len(report.Problems) > 0 {
		d.fail("stored", fmt.Sprintf("%d of %d rows hold values past today's bounds (listed below)", len(report.Problems), report.Checked),
			"rewrite them within the bounds (cks task update, a new object version); they are still served as they are")
		return nil
	}
	d.ok("stored", fmt.Sprintf("%d rows checked: nothing past a bound", report.Checked))
	return nil
}

func printFindings(w io.Writer, r *doctorReport) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, f := range r.Findings {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Status, f.Check, f.Detail)
		switch {
		case f.Fix != "" && f.Status == "warn":
			fmt.Fprintf(tw, "\t\t%s\n", f.Fix)
		case f.Fix != "":
			fmt.Fprintf(tw, "\t\tfix: %s (exit %d)\n", f.Fix, f.Exit)
		}
	}
	tw.Flush()
	if len(r.Stored.Problems) > 0 {
		fmt.Fprintln(w)
		printProblems(w, r.Stored)
	}
}

func printProblems(w io.Writer, r cks.StoredCheck) {
	if len(r.Problems) == 0 {
		fmt.Fprintf(w, "%d rows checked: nothing past a bound\n", r.Checked)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tID\tFIELD\tEXPECTED")
	for _, p := range r.Problems {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", p.Kind, p.ID, p.Field, p.Problem)
	}
	tw.Flush()
}
