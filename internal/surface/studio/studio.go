// Package studio is the cks web console: server-rendered html/template pages
// plus one small script that refreshes them when the hub's Server-Sent Events
// say something changed. The pages are the Agent Panel (process cards whose
// Stop button calls the hub's POST /v1/processes/{instance_id}/stop; sweeper
// cards whose Start and Stop buttons call the hub's /v1/sweepers API), the
// task board (/tasks: STOPPED band and NEEDS_INPUT inbox first, filters by
// state, type, stopped_longer_than, text, creator and unconfirmed abort, a
// sort, cursor paging, bulk actions calling the API's bulk routes, live on
// the hub's "tasks" events) and task pages (/tasks/{id}, live likewise, whose forms
// call the API's routes of stop, start, cancel, retry, answer, review and
// update, and /tasks/new, create_task's form), the Flow control page
// (/flow: flow.go; the paused task types and the schedules, with their
// verbs), the Spend page (/spend: spend.go; get_usage's sums over a
// window, charted and tabled), the access page (/access:
// access.go; principals, grants, tokens and sessions), the
// knowledge inspector (/objects, /objects/{id}, /objects/{id}/forks:
// objects.go, versions.go) and the research page (/research: research.go).
// Every read goes through the operations of the table (package ops) with the
// caller's permissions, and every action is a call of the API's route of an
// operation. There is no front-end build step and no CDN; the templates, the
// stylesheet, the favicon and the script are embedded in the binary.
//
// The hub mounts the handler returned by New at "/" behind its auth middleware.
// The hub owns authentication, cookies, POST /login and /logout and
// /v1/events; studio only renders pages and serves its own assets.
package studio

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/runtime/sweeper"
	"github.com/cks-dev/cks/internal/service/auth"
)

// Options configures the studio handler.
type Options struct {
	// Version is the cks version shown in the page footer.
	Version string
	// Logger receives errors from the services and from rendering. Nil
	// means the services' Logger, else slog.Default().
	Logger *slog.Logger
	// StaleStopAfter is how long a task may stay STOPPED before the board
	// flags it: the hub passes the stale_stop_report sweeper's threshold
	// (CKS_STALE_STOP_THRESHOLD), so both report the same tasks. Zero means
	// sweeper.DefaultStaleStopThreshold.
	StaleStopAfter time.Duration
}

// The routes New serves, relative to where the hub mounts the handler ("/").
const (
	// FragmentPath serves only the process cards; the page script fetches it to
	// refresh them in place.
	FragmentPath = "/studio/processes"
	// HistoryPath pages a kind's process history (?kind=, ?cursor=).
	HistoryPath = "/processes/history"
	// SweepersFragmentPath serves only the sweeper cards, likewise.
	SweepersFragmentPath = "/studio/sweepers"
	// BoardFragmentPath serves the task board's lists alone (with the
	// board's query), and BoardFragmentPath/{id} a task page's live part:
	// the page script swaps them in when a "tasks" event arrives.
	BoardFragmentPath = "/studio/tasks"
	// LoginPath renders the login form. The hub handles the form's POST.
	LoginPath = "/login"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// asset is one embedded static file, prepared once at start-up.
type asset struct {
	data        []byte
	contentType string
	hash        string // short content hash, used as the ?v= cache buster
	etag        string
}

var assets = loadAssets()

// pages holds one template set per page; each is the layout plus the page's
// "content" block.
var pages = map[string]*template.Template{
	"panel":    parsePage("panel.html"),
	"history":  parsePage("panel.html", "history.html"), // panel.html has the "card" template
	"login":    parsePage("login.html"),
	"notfound": parsePage("notfound.html"),
	"error":    parsePage("error.html"),
	"tasks":    parsePage("tasks.html"),
	"task":     parsePage("task.html"),
	"newtask":  parsePage("newtask.html"),
	"objects":  parsePage("objects.html"),
	"object":   parsePage("object.html", "knowledge.html"),
	"forks":    parsePage("forks.html", "knowledge.html"),
	"research": parsePage("research.html", "knowledge.html"),
	"charts":   parsePage("charts.html"),
	"access":   parsePage("access.html"),
	"flow":     parsePage("flow.html"),
	"spend":    parsePage("spend.html"),
}

func loadAssets() map[string]asset {
	out := map[string]asset{}
	entries, err := fs.ReadDir(staticFS, "static")
	if err != nil {
		panic(fmt.Sprintf("studio: read embedded assets: %v", err))
	}
	for _, e := range entries {
		data, err := fs.ReadFile(staticFS, "static/"+e.Name())
		if err != nil {
			panic(fmt.Sprintf("studio: read embedded asset %s: %v", e.Name(), err))
		}
		sum := sha256.Sum256(data)
		hash := hex.EncodeToString(sum[:6])
		out[e.Name()] = asset{
			data:        data,
			contentType: contentType(e.Name()),
			hash:        hash,
			etag:        `"` + hash + `"`,
		}
	}
	return out
}

// contentType pins the types of the asset kinds studio ships, so they do not
// depend on the host's MIME tables.
func contentType(name string) string {
	switch ext := path.Ext(name); ext {
	case ".css":
		return "text/css; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	default:
		if t := mime.TypeByExtension(ext); t != "" {
			return t
		}
		return "application/octet-stream"
	}
}

// assetURL is the versioned URL of an embedded asset; it changes whenever the
// file's content does, so the asset can be cached for good.
func assetURL(name string) (string, error) {
	a, ok := assets[name]
	if !ok {
		return "", fmt.Errorf("studio: no embedded asset %q", name)
	}
	return "/static/" + name + "?v=" + a.hash, nil
}

// parsePage parses the layout, the page's template and the shared blocks
// it uses (more).
func parsePage(name string, more ...string) *template.Template {
	files := []string{"templates/layout.html", "templates/" + name}
	for _, m := range more {
		files = append(files, "templates/"+m)
	}
	return template.Must(template.New(name).
		Funcs(template.FuncMap{"asset": assetURL, "pair": pair, "size": byteSize, "spendTable": spendTableOf}).
		ParseFS(templateFS, files...))
}

// attemptArgs is the argument of the task page's "attempt" template: an
// attempt and the task's current revision.
type attemptArgs struct {
	A   attemptView
	Rev int
}

func pair(a attemptView, rev int) attemptArgs { return attemptArgs{A: a, Rev: rev} }

// byteSize says how long a text is, in bytes, KB or MB ("20.0 KB"): the
// task page shows it beside a long field, which it bounds to a box of its
// own.
func byteSize(s string) string {
	n := len(s)
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	}
}

// New returns the studio handler over svc, the hub's one set of services
// (the HTTP API and the MCP server share it). Every page reads through the
// operations of the table (package ops), which check that the caller in the
// request context (the hub authenticates it in front) holds the operation's
// permission: a page the caller may not read is a 403 page naming what is
// missing. What svc lacks the studio leaves out: no Sweepers, no sweeper
// cards; no Tasks, no task board. svc's Clock tells the time of ages ("12s
// ago", stopped longer than the threshold); nil means the system clock.
func New(svc *ops.Services, opts Options) http.Handler {
	s := &server{ops: svc, version: opts.Version, log: opts.Logger, clock: svc.Clock, staleStop: opts.StaleStopAfter}
	if s.log == nil {
		s.log = svc.Logger
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.clock == nil {
		s.clock = clock.System{}
	}
	if s.version == "" {
		s.version = "dev"
	}
	if s.staleStop <= 0 {
		s.staleStop = sweeper.DefaultStaleStopThreshold
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.panel)
	mux.HandleFunc("GET "+FragmentPath, s.fragment)
	mux.HandleFunc("GET "+HistoryPath, s.history)
	mux.HandleFunc("GET "+SweepersFragmentPath, s.sweepersFragment)
	if s.ops.Tasks != nil {
		mux.HandleFunc("GET "+TasksPath, s.taskBoard)
		mux.HandleFunc("GET "+TasksPath+"/{id}", s.taskPage)
		mux.HandleFunc("GET "+TasksPath+"/new", s.newTask)
		mux.HandleFunc("GET "+BoardFragmentPath, s.boardFragment)
		mux.HandleFunc("GET "+BoardFragmentPath+"/{id}", s.taskPage)
		mux.HandleFunc("GET "+ChartsPath, s.chartsPage)
		mux.HandleFunc("GET "+ChartsFragmentPath, s.chartsFragment)
		mux.HandleFunc("GET "+FlowPath, s.flowPage)
		mux.HandleFunc("GET "+FlowFragmentPath, s.flowFragment)
		mux.HandleFunc("GET "+SpendPath, s.spendPage)
		mux.HandleFunc("GET "+SpendFragmentPath, s.spendFragment)
	}
	if s.ops.Objects != nil {
		mux.HandleFunc("GET "+ObjectsPath, s.objectList)
		mux.HandleFunc("GET "+ObjectsPath+"/{id}", s.objectPage)
		mux.HandleFunc("GET "+ObjectsPath+"/{id}/forks", s.forksPage)
		mux.HandleFunc("GET "+ObjectFragmentPath+"{id}", s.objectFragment)
		mux.HandleFunc("GET "+ResearchPath, s.research)
		mux.HandleFunc("GET "+ResearchFragmentPath+"{id}", s.researchFragment)
	}
	if s.ops.Principals != nil {
		mux.HandleFunc("GET "+AccessPath, s.access)
	}
	mux.HandleFunc("GET /static/{file}", s.static)
	mux.HandleFunc("GET "+LoginPath, s.login)
	mux.HandleFunc("GET /", s.notFound)
	return mux
}

type server struct {
	// ops are the services the pages read through the operations of the
	// table; no Sweepers: no sweeper cards, no Tasks: no task board.
	ops       *ops.Services
	clock     clock.Clock
	staleStop time.Duration
	version   string
	log       *slog.Logger
}

// layout is what every full page passes to the "layout" template.
type layout struct {
	Title   string
	Version string
	// Nav names the header link of the current page: "panel", "tasks",
	// "flow" …
	Nav string
	// Tasks shows the header links to the task board, the charts, the
	// Flow control page and the Spend page.
	Tasks bool
	// Objects shows the header links to the knowledge inspector and the
	// research page.
	Objects bool
	// Who names the signed-in principal beside the sign-out button; render
	// fills it from the request.
	Who string
	// Access shows the header link to the access page; render sets it when
	// the principal may read it (admin on /).
	Access bool
	// Live shows the live indicator: the page follows the hub's events.
	// Every page has the page script (it also shows times in the
	// browser's time zone).
	Live bool
	// Public leaves out the navigation (the login form).
	Public bool
	// Skip, when set, is a second skip link after "Skip to content", to
	// the part of the page most visits are for (the board's task list).
	Skip *skipLink
	Body any
}

// skipLink is a link past the page's header and controls to the element
// with the id Target.
type skipLink struct{ Target, Label string }

// page is the layout of a signed-in page.
func (s *server) page(title, nav string, live bool, body any) layout {
	return layout{Title: title, Version: s.version, Nav: nav, Tasks: s.ops.Tasks != nil, Objects: s.ops.Objects != nil,
		Live: live, Body: body}
}

// panelView is the data of the Agent Panel.
type panelView struct {
	Processes processesView
	Sweepers  sweepersView
}

// errorView is the data of the error page.
type errorView struct {
	Heading string
	Message string
}

// errorPage renders a full page with a heading and a message.
func (s *server) errorPage(w http.ResponseWriter, r *http.Request, status int, heading, msg string) {
	s.render(w, r, status, pages["error"], "layout", s.page(heading, "", false, errorView{Heading: heading, Message: msg}))
}

// forbidden renders the 403 page of a read the caller may not make, and
// reports whether err was that refusal.
func (s *server) forbidden(w http.ResponseWriter, r *http.Request, err error) bool {
	if !errors.Is(err, auth.ErrForbidden) {
		return false
	}
	s.errorPage(w, r, http.StatusForbidden, "Forbidden", err.Error())
	return true
}

// logErr logs a service error; a cancelled request (the browser went away)
// is only a debug message.
func (s *server) logErr(r *http.Request, msg string, err error, attrs ...any) {
	level := slog.LevelError
	if errors.Is(err, context.Canceled) {
		level = slog.LevelDebug
	}
	s.log.Log(r.Context(), level, msg, append([]any{"path", r.URL.Path, "err", err}, attrs...)...)
}

// processesView is the data of the "processes" block.
type processesView struct {
	Cards []card
	// Groups are the cards by process kind (kinds with a live instance
	// first, then in the cards' order): the live instances, and the newest
	// HistoryCap stopped ones, collapsed, the rest a page further on
	// (HistoryPath).
	Groups         []procGroup
	Alive, Stopped int
	// Failed means the service could not list processes; the block shows an
	// error instead of cards.
	Failed bool
}

// HistoryCap is how many stopped instances of a kind the Agent Panel
// lists, and the size of a page of HistoryPath.
const HistoryCap = 10

// RecentlyStopped is how long an instance that stopped keeps its card
// among its kind's live ones, reading stopped where it was, before it goes
// to the collapsed history: an operator who clicked its Stop sees it end
// in place (issue 39).
const RecentlyStopped = 10 * time.Minute

// procGroup is the cards of one process kind.
type procGroup struct {
	Kind string
	// Live are the alive instances and those stopped within
	// RecentlyStopped, newest started first; Alive counts the first.
	Live    []card
	Alive   int
	History []card
	// More is the cursor of the kind's older instances (HistoryPath), ""
	// when History holds them all.
	More string
}

// groupCards groups the live view's cards (alive first, newest first
// otherwise) by kind: its alive cards are Live; its stopped ones (the
// newest instance of a kind that stopped) are left to the history the
// caller reads.
func groupCards(cards []card) []procGroup {
	var out []procGroup
	at := map[string]int{}
	for _, c := range cards {
		i, ok := at[c.Kind]
		if !ok {
			i = len(out)
			at[c.Kind] = i
			out = append(out, procGroup{Kind: c.Kind})
		}
		g := &out[i]
		if c.Alive {
			g.Live = append(g.Live, c)
			g.Alive++
		}
	}
	slices.SortStableFunc(out, func(a, b procGroup) int {
		return cmp.Compare(min(len(b.Live), 1), min(len(a.Live), 1))
	})
	return out
}

// keepRecent moves the cards of hist that stopped within RecentlyStopped
// into g.Live, in the order the listings share (newest started first),
// and leaves the others in g.History.
func (g *procGroup) keepRecent(hist []card) {
	g.History = nil
	for _, c := range hist {
		if c.stoppedFor >= 0 && c.stoppedFor < RecentlyStopped.Seconds() {
			g.Live = append(g.Live, c)
		} else {
			g.History = append(g.History, c)
		}
	}
	slices.SortStableFunc(g.Live, func(a, b card) int { return cmp.Compare(b.StartedAt, a.StartedAt) })
}

// card is one process instance, formatted for display.
type card struct {
	// Tasks links the current task to its page (the studio has the board).
	Tasks       bool
	Kind        string
	InstanceID  string
	ShortID     string
	Host        string
	PID         int
	Status      cks.ProcessStatus
	Alive       bool
	Age         string // "12s ago"
	HeartbeatAt string // RFC 3339, for <time datetime>
	Interval    string // "30s"
	TaskID      string // "" when idle
	TaskType    string
	// TaskTypes are the task types the instance claims; Paused names who
	// paused those of them that are paused (pause_type).
	TaskTypes []string
	Paused    map[string]string
	// StopRequested: the instance is alive and has been asked to stop
	// (desired_state stop_requested, ADR-016); it is draining.
	StopRequested bool
	// CanStop offers the Stop button: alive and not already asked. There is
	// never a start button; cks cannot launch a process (ADR-016 §4).
	CanStop bool
	// Refused says why the viewer may not use the Stop button (the
	// permission request_process_stop needs on the kind): it is shown
	// disabled with it.
	Refused string
	// StartedAt (RFC 3339) and StartedAge ("2h ago") say when the
	// instance started (ADR-014's started_at).
	StartedAt, StartedAge string
	// ExitedAt (RFC 3339) and ExitedAge ("5m ago") say when the instance
	// exited gracefully; ExitedAt is "" while it runs or since it died
	// without saying so.
	ExitedAt, ExitedAge string
	// stoppedFor is how many seconds ago a stopped instance was last
	// alive (its exit, else its last heartbeat); -1 while it is alive.
	stoppedFor float64
}

// loginView is the login form's notice: a refused token (Error), or an
// address the hub throttles after repeated failures (Throttled, with the
// seconds to wait).
type loginView struct {
	Error     bool
	Throttled bool
	Retry     int
}

func (s *server) panel(w http.ResponseWriter, r *http.Request) {
	pv, status, err := s.processes(r)
	if s.forbidden(w, r, err) {
		return
	}
	sv, sweepStatus, err := s.sweepers(r)
	if s.forbidden(w, r, err) {
		return
	}
	s.render(w, r, max(status, sweepStatus), pages["panel"], "layout",
		s.page("Agent Panel", "panel", true, panelView{Processes: pv, Sweepers: sv}))
}

func (s *server) fragment(w http.ResponseWriter, r *http.Request) {
	v, status, err := s.processes(r)
	if s.forbidden(w, r, err) {
		return
	}
	// The script swaps a response in only when it carries this header, so a
	// login page or a proxy error never ends up inside the card container.
	w.Header().Set("X-Studio-Fragment", "processes")
	s.render(w, r, status, pages["panel"], "processes", v)
}

func (s *server) login(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	failed := q.Get("error")
	v := loginView{Throttled: failed == "throttled", Error: failed != "" && failed != "0" && failed != "throttled"}
	if v.Throttled {
		v.Retry, _ = strconv.Atoi(q.Get("retry"))
		v.Retry = min(max(v.Retry, 1), 3600)
	}
	s.render(w, r, http.StatusOK, pages["login"], "layout",
		layout{Title: "Sign in", Version: s.version, Public: true, Body: v})
}

func (s *server) notFound(w http.ResponseWriter, r *http.Request) {
	// A page of nothing still needs read on the root, as the hub's other
	// unknown paths do.
	if s.forbidden(w, r, auth.Require(r.Context(), auth.PermRead, auth.ResourceRoot)) {
		return
	}
	s.render(w, r, http.StatusNotFound, pages["notfound"], "layout", s.page("Not found", "", false, nil))
}

// processes reads the live processes (list_processes' default view) and
// formats them, alive instances first and otherwise in the service's
// newest-started-first order, each kind with the first page of its
// stopped instances (list_processes with history). Only a refusal is
// returned as an error; any other failure is the block's Failed.
func (s *server) processes(r *http.Request) (processesView, int, error) {
	list, err := ops.ListProcesses.Do(r.Context(), s.ops, &cks.ListProcessesInput{Limit: cks.MaxListLimit})
	if errors.Is(err, auth.ErrForbidden) {
		return processesView{}, http.StatusForbidden, err
	}
	if err != nil {
		s.logErr(r, "studio: list processes", err)
		return processesView{Failed: true}, http.StatusInternalServerError, nil
	}
	ps := list.Processes
	slices.SortStableFunc(ps, func(a, b cks.Process) int {
		return cmp.Compare(rank(a.Status), rank(b.Status))
	})
	v := processesView{Cards: s.refuseStops(r.Context(), s.markPaused(r.Context(), s.cards(ps)))}
	for _, c := range v.Cards {
		if c.Alive {
			v.Alive++
		} else {
			v.Stopped++
		}
	}
	v.Groups = groupCards(v.Cards)
	for i := range v.Groups {
		g := &v.Groups[i]
		hist, err := ops.ListProcesses.Do(r.Context(), s.ops, &cks.ListProcessesInput{History: true, Alive: new(false),
			Kind: cks.Names{g.Kind}, Limit: HistoryCap})
		if err != nil {
			s.logErr(r, "studio: list process history", err, "kind", g.Kind)
			return processesView{Failed: true}, http.StatusInternalServerError, nil
		}
		g.keepRecent(s.refuseStops(r.Context(), s.cards(hist.Processes)))
		g.More = hist.Next
	}
	return v, http.StatusOK, nil
}

// markPaused notes on each card which of its task types are paused, and
// by whom (none when the viewer may not read the paused types, or the
// studio has no ledger).
func (s *server) markPaused(ctx context.Context, cards []card) []card {
	if s.ops.Tasks == nil { // a panel without the ledger
		return cards
	}
	ts, err := s.pausedTypes(ctx, s.clock.Now())
	if err != nil || len(ts) == 0 {
		return cards
	}
	by := make(map[string]string, len(ts))
	for _, t := range ts {
		by[t.Type] = t.By
	}
	for i := range cards {
		cards[i].Paused = by
	}
	return cards
}

// cards formats processes for display.
func (s *server) cards(ps []cks.Process) []card {
	out := make([]card, 0, len(ps))
	for _, p := range ps {
		c := card{
			Kind:        p.ProcessKind,
			InstanceID:  p.InstanceID,
			ShortID:     shortID(p.InstanceID),
			Host:        p.Hostname,
			PID:         p.PID,
			Status:      p.Status,
			Alive:       p.Status == cks.ProcessAlive,
			Age:         humanAge(p.HeartbeatAgeS),
			HeartbeatAt: p.LastHeartbeatAt.UTC().Format(time.RFC3339),
			Interval:    strconv.FormatFloat(p.LivenessIntervalS, 'f', -1, 64) + "s",
			TaskType:    p.CurrentTaskType,
			TaskTypes:   p.TaskTypes,
			stoppedFor:  -1,
		}
		if p.CurrentTaskID != nil {
			c.TaskID = strconv.FormatInt(*p.CurrentTaskID, 10)
		}
		if !p.StartedAt.IsZero() {
			// The start's age from the heartbeat's, which the service read
			// at its own now.
			c.StartedAt = p.StartedAt.UTC().Format(time.RFC3339)
			c.StartedAge = humanAge(p.HeartbeatAgeS + p.LastHeartbeatAt.Sub(p.StartedAt).Seconds())
		}
		if !c.Alive {
			c.stoppedFor = max(p.HeartbeatAgeS, 0)
		}
		if !p.ExitedAt.IsZero() {
			c.ExitedAt = p.ExitedAt.UTC().Format(time.RFC3339)
			// A listing reads its time before its rows: an exit written
			// in between is "just now", not in the future (where it
			// read as no recent stop, and its card went to the history).
			c.stoppedFor = max(p.HeartbeatAgeS-p.ExitedAt.Sub(p.LastHeartbeatAt).Seconds(), 0)
			c.ExitedAge = humanAge(c.stoppedFor)
		}
		c.StopRequested = c.Alive && p.DesiredState == cks.DesiredStopRequested
		c.CanStop = c.Alive && !c.StopRequested
		c.Tasks = s.ops.Tasks != nil
		out = append(out, c)
	}
	return out
}

// refuseStops sets the Refused of the cards that offer Stop when the
// caller in ctx may not call request_process_stop on their kind (asked
// once per kind), and returns cards.
func (s *server) refuseStops(ctx context.Context, cards []card) []card {
	why := map[string]string{}
	for i := range cards {
		c := &cards[i]
		if !c.CanStop {
			continue
		}
		msg, ok := why[c.Kind]
		if !ok {
			if err := ops.Authorize(ctx, s.ops, ops.RequestProcessStop, &cks.ProcessInput{ProcessKind: c.Kind}); err != nil {
				msg = err.Error()
			}
			why[c.Kind] = msg
		}
		c.Refused = msg
	}
	return cards
}

// historyView is the data of the process history page.
type historyView struct {
	Kind  string
	Cards []card
	// Next is the URL of the following page, "" on the last.
	Next string
}

// history is a page of one kind's process history (or every kind's):
// list_processes with history, from the query's cursor, HistoryCap at a
// time. A bad kind or cursor is the operation's refusal, naming the field.
func (s *server) history(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	v := historyView{Kind: q.Get("kind")}
	in := cks.ListProcessesInput{History: true, Cursor: q.Get("cursor"), Limit: HistoryCap}
	if v.Kind != "" {
		in.Kind = cks.Names{v.Kind}
	}
	page, err := ops.ListProcesses.Do(r.Context(), s.ops, &in)
	if s.forbidden(w, r, err) {
		return
	}
	if fe, ok := errors.AsType[*cks.FieldError](err); ok {
		s.errorPage(w, r, http.StatusBadRequest, "Bad page", fe.Error()+". Go back to the Agent Panel.")
		return
	}
	if err != nil {
		s.logErr(r, "studio: list process history", err)
		s.errorPage(w, r, http.StatusInternalServerError, "Could not list processes",
			"The process history could not be read. The error was logged on the hub; reload this page to try again.")
		return
	}
	v.Cards = s.refuseStops(r.Context(), s.markPaused(r.Context(), s.cards(page.Processes)))
	if page.Next != "" {
		next := url.Values{"cursor": {page.Next}}
		if v.Kind != "" {
			next.Set("kind", v.Kind)
		}
		v.Next = HistoryPath + "?" + next.Encode()
	}
	title := "Process history"
	if v.Kind != "" {
		title = v.Kind + " history"
	}
	s.render(w, r, http.StatusOK, pages["history"], "layout", s.page(title, "panel", false, v))
}

func rank(s cks.ProcessStatus) int {
	if s == cks.ProcessAlive {
		return 0
	}
	return 1
}

// shortID keeps the first 8 characters of a long instance id (a uuid4 in
// practice); the page shows the full id in a title attribute.
func shortID(id string) string {
	const keep = 8
	if utf8.RuneCountInString(id) <= keep+4 {
		return id
	}
	n := 0
	for i := range id {
		if n == keep {
			return id[:i] + "…"
		}
		n++
	}
	return id
}

// humanAge renders a heartbeat age in seconds as "12s ago", "3m ago", "2h ago"
// or "4d ago". Ages under a second, and negative ones from clock skew between
// hosts, read "just now".
func humanAge(seconds float64) string {
	d := time.Duration(seconds * float64(time.Second))
	switch {
	case d < time.Second:
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", d/time.Second)
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", d/time.Minute)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh ago", d/time.Hour)
	default:
		return fmt.Sprintf("%dd ago", d/(24*time.Hour))
	}
}

// contentSecurityPolicy allows only same-origin scripts, styles and
// connections; the pages have no inline script or style.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; " +
	"connect-src 'self'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// render executes the template into a buffer first, so a template error becomes
// a clean 500 instead of half a page.
func (s *server) render(w http.ResponseWriter, r *http.Request, status int, t *template.Template, name string, data any) {
	if l, ok := data.(layout); ok && !l.Public {
		if p, ok := auth.PrincipalFrom(r.Context()); ok {
			l.Who = p.Name
		}
		l.Access = s.mayAdminister(r)
		data = l
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, data); err != nil {
		s.log.ErrorContext(r.Context(), "studio: render", "template", name, "path", r.URL.Path, "err", err)
		http.Error(w, "studio: the page could not be rendered; the error was logged", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	send(w, r, status, buf.Bytes())
}

// static serves an embedded asset. A request carrying the current content hash
// (as the pages link it) may be cached for a year; any other request must
// revalidate against the ETag.
func (s *server) static(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	a, ok := assets[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", a.contentType)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("ETag", a.etag)
	if r.URL.Query().Get("v") == a.hash {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(a.data))
}
