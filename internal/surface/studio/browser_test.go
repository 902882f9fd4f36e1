package studio_test

// The browser-test harness: real Chromium (Debian's chromium, or the binary
// CKS_CHROMIUM names) driven over the DevTools protocol with chromedp, against
// a real hub (hub.Run in this process, on a fresh data directory and a fresh
// database of either backend). One browser serves the package; each test gets
// a tab in a browser context of its own (its own cookies and storage). Every
// wait is a condition (waitVisible, a poll of the page with a deadline), never
// a sleep; a failed test leaves a screenshot of its tab in
// testdata/artifacts/ (ignored by git; CKS_BROWSER_ARTIFACTS names another
// directory). Without Chromium the browser tests skip, saying so, unless
// CI=true: then they fail.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/datadir"
	"github.com/cks-dev/cks/internal/config"
	"github.com/cks-dev/cks/internal/hub"
)

// browserWait bounds each step of a browser test (a navigation, a wait for an
// element): generous for a loaded 2-core machine (at a load of 20, steps
// that take a second took over 20 s), short enough that a broken page fails
// the test in a minute rather than at the package's timeout.
const browserWait = 60 * time.Second

// chromium finds the browser: CKS_CHROMIUM, else the first of the usual
// names on PATH; "" when there is none.
func chromium() string {
	if p := os.Getenv("CKS_CHROMIUM"); p != "" {
		return p
	}
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// theBrowser is the package's one Chromium, started by the first test that
// needs it and ended by TestMain.
var theBrowser struct {
	once   sync.Once
	ctx    context.Context // the first tab's: its allocator runs the browser
	cancel func()
	dir    string // the profile directory
	err    error
}

// startBrowser starts Chromium headless with the flags this machine's
// closed network needs (no background networking, component updates, sync
// or QUIC) and a fresh, empty profile.
func startBrowser(bin string) (context.Context, func(), string, error) {
	dir, err := os.MkdirTemp("", "cks-chromium-")
	if err != nil {
		return nil, nil, "", err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.NoSandbox, // root in CI
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(dir),
		chromedp.WindowSize(1280, 900),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	var copts []chromedp.ContextOption
	if os.Getenv("CKS_BROWSER_DEBUG") != "" { // every protocol message, on stderr
		copts = append(copts, chromedp.WithDebugf(func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }))
	}
	ctx, cancelCtx := chromedp.NewContext(alloc, copts...)
	cancel := func() { cancelCtx(); cancelAlloc(); os.RemoveAll(dir) }
	// The first Do starts the browser, which lives as long as ctx: no
	// deadline on it (the allocator's start has its own).
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		return nil, nil, "", fmt.Errorf("start %s: %w", bin, err)
	}
	return ctx, cancel, dir, nil
}

// stopBrowser ends the package's browser, if one started (TestMain).
func stopBrowser() {
	if theBrowser.cancel != nil {
		theBrowser.cancel()
	}
}

// needBrowser skips t when there is no Chromium (failing it when CI=true:
// CI installs it, .ci/run) and returns the package's browser.
func needBrowser(t testing.TB) context.Context {
	t.Helper()
	bin := chromium()
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no Chromium (chromium on PATH or CKS_CHROMIUM) but CI=true: the browser tests must run in CI (.ci/run installs chromium)")
		}
		t.Skip("no Chromium on PATH (apt-get install chromium, or set CKS_CHROMIUM): browser tests skipped")
	}
	theBrowser.once.Do(func() {
		theBrowser.ctx, theBrowser.cancel, theBrowser.dir, theBrowser.err = startBrowser(bin)
	})
	if theBrowser.err != nil {
		t.Fatalf("browser: %v", theBrowser.err)
	}
	return theBrowser.ctx
}

// tab is one browser tab of a test, in a browser context of its own.
type tab struct {
	t   testing.TB
	ctx context.Context
}

// newTab opens a tab for t in a fresh browser context (no cookies), of the
// given width in CSS pixels (0: 1280), closed when t ends; a failed t first
// saves a screenshot of it.
func newTab(t testing.TB, width int) *tab {
	t.Helper()
	root := needBrowser(t)
	ctx, cancel := chromedp.NewContext(root, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	// The first Do opens the tab, which lives as long as the context of
	// that call: ctx itself, never one with a deadline.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("browser: open a tab: %v", err)
	}
	tb := &tab{t: t, ctx: ctx}
	if width == 0 {
		width = 1280
	}
	tb.do(chromedp.EmulateViewport(int64(width), 900))
	t.Cleanup(func() {
		if t.Failed() {
			tb.screenshot("failed")
		}
	})
	return tb
}

// artifactsDir is where screenshots of failed tests go.
func artifactsDir() string {
	if d := os.Getenv("CKS_BROWSER_ARTIFACTS"); d != "" {
		return d
	}
	return filepath.Join("testdata", "artifacts")
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// screenshot saves a full-page screenshot of the tab as
// ARTIFACTS/TEST-suffix.png and logs where.
func (tb *tab) screenshot(suffix string) {
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.t.Logf("screenshot: %v", err)
		return
	}
	dir := artifactsDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.t.Logf("screenshot: %v", err)
		return
	}
	path := filepath.Join(dir, unsafeName.ReplaceAllString(tb.t.Name(), "_")+"-"+suffix+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		tb.t.Logf("screenshot: %v", err)
		return
	}
	tb.t.Logf("screenshot of the page: %s", path)
}

// onEveryPage runs the JavaScript source at the start of every page the tab
// opens from now on, before the page's own scripts (window.cksPollMs, the
// page script's fallback poll, set long).
func (tb *tab) onEveryPage(source string) {
	tb.t.Helper()
	tb.do(chromedp.Func(func(ctx context.Context, tt *chromedp.Target) error {
		_, err := cdp.Call(ctx, tt, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: source})
		return err
	}))
}

// do runs steps within browserWait, failing the test on an error.
func (tb *tab) do(steps ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	if err := tb.try(steps...); err != nil {
		tb.t.Fatalf("browser: %v (at %s)", err, tb.location())
	}
}

// try runs steps within browserWait and returns their error.
func (tb *tab) try(steps ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(tb.ctx, browserWait)
	defer cancel()
	err := chromedp.Do(ctx, steps...)
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no condition met within %s: %w", browserWait, err)
	}
	return err
}

// value runs a at once within browserWait and returns its value, failing
// the test on an error.
func value[T any](tb *tab, a chromedp.Action[T]) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, browserWait)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		tb.t.Fatalf("browser: %v (at %s)", err, tb.location())
	}
	return v
}

// location is the tab's URL, for messages.
func (tb *tab) location() string {
	ctx, cancel := context.WithTimeout(tb.ctx, 2*time.Second)
	defer cancel()
	u, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		return "unknown page"
	}
	return u
}

// text returns the text of the first element the CSS selector sel
// matches, once visible: read in the same evaluation that finds it.
func (tb *tab) text(sel string) string {
	tb.t.Helper()
	q := fmt.Sprintf(`(() => { const e = %s; return e && e.checkVisibility() ? e.innerText : null; })()`, elementJS(chromedp.CSS(sel)))
	var text string
	tb.do(untilPage(string(sel), q, func(v *string) bool {
		if v == nil {
			return false
		}
		text = *v
		return true
	}))
	return text
}

// selector is a selector of the page's elements the helpers below take:
// chromedp.CSS (the first match) or chromedp.ID.
type selector interface {
	chromedp.CSS | chromedp.ID
}

// elementJS is a JavaScript expression for the element sel names (null
// when the page has none).
func elementJS[S selector](sel S) string {
	switch s := any(sel).(type) {
	case chromedp.ID:
		return "document.getElementById(" + jsString(string(s)) + ")"
	case chromedp.CSS:
		return "document.querySelector(" + jsString(string(s)) + ")"
	}
	panic("unreachable")
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// waitVisible waits until the element sel names is on the page and
// visible. Unlike chromedp.WaitVisible, which looks a node up and then
// asks about it in separate calls, it asks the page in one evaluation
// per poll: a live fragment swapped in between (an SSE event re-renders
// the task page's actions) cannot leave it holding a node id the page
// no longer has.
func waitVisible[S selector](sel S) chromedp.Action[chromedp.Void] {
	q := fmt.Sprintf(`(() => { const e = %s; return !!e && e.checkVisibility(); })()`, elementJS(sel))
	return untilPage(string(sel), q, func(ok *bool) bool { return ok != nil && *ok })
}

// click waits until the element sel names is visible and clicks it, in
// the same evaluation (see waitVisible): focus, then click, as a mouse
// would.
func click[S selector](sel S) chromedp.Action[chromedp.Void] {
	q := fmt.Sprintf(`(() => { const e = %s; if (!e || !e.checkVisibility()) return false; e.focus(); e.click(); return true; })()`, elementJS(sel))
	return untilPage(string(sel), q, func(ok *bool) bool { return ok != nil && *ok })
}

// untilPage evaluates the JavaScript expression q every 20 ms until done
// accepts its value (an evaluation that fails, as during a navigation,
// counts as not yet) or the context ends; what names the element in the
// error.
func untilPage[T any](what, q string, done func(*T) bool) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			v, err := chromedp.Evaluate[*T](q)(ctx, t)
			if err == nil && done(v) {
				return chromedp.Void{}, nil
			}
			select {
			case <-ctx.Done():
				return chromedp.Void{}, fmt.Errorf("waiting for %s: %w", what, ctx.Err())
			case <-tick.C:
			}
		}
	}
}

// js evaluates a JavaScript expression of type T.
func js[T any](tb *tab, expr string) T {
	tb.t.Helper()
	return value(tb, chromedp.Evaluate[T](expr))
}

// waitTrue polls the JavaScript condition expr (every 50 ms, within
// browserWait) until it is true; what says what was waited for.
// reloads runs steps that end in a reload of the page (a task action that
// succeeds reloads it) and waits for the new page to be complete: a step
// taken on the old page meanwhile — a click on its Start button, which it
// shows as well — is lost to the reload (the CI flake of
// TestBrowserAddDependencyThenStart).
func (tb *tab) reloads(steps ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	js[bool](tb, `(window.cksOldPage = true)`)
	tb.do(steps...)
	tb.waitTrue("the page reloaded", `!window.cksOldPage && document.readyState === "complete"`)
}

func (tb *tab) waitTrue(what, expr string) {
	tb.t.Helper()
	if err := tb.poll(expr); err != nil {
		tb.t.Fatalf("browser: %s: %v (at %s)", what, err, tb.location())
	}
}

// poll evaluates the JavaScript condition expr every 50 ms until it is
// true or browserWait passes, and says which.
func (tb *tab) poll(expr string) error {
	ctx, cancel := context.WithTimeout(tb.ctx, browserWait)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr)); err == nil && ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not so within %s", browserWait)
		case <-tick.C:
		}
	}
}

// dialogs are the JavaScript dialogs (confirm, alert) of a tab, answered
// as the test says (answerDialogs).
type dialogs struct {
	mu     sync.Mutex
	msgs   []string
	accept bool
}

// answerDialogs answers every JavaScript dialog the tab opens from now on
// — accepting it, as a person clicking OK, unless set otherwise — and
// records its message, until the test ends.
func (tb *tab) answerDialogs() *dialogs {
	d := &dialogs{accept: true}
	ctx, cancel := context.WithCancel(tb.ctx)
	tb.t.Cleanup(cancel)
	events := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range events {
			if err != nil {
				return
			}
			d.mu.Lock()
			d.msgs = append(d.msgs, ev.Message)
			accept := d.accept
			d.mu.Unlock()
			chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: accept}) //nolint:errcheck // the tab may be closing
		}
	}()
	return d
}

// setAccept makes the next dialogs accepted (OK) or dismissed (Cancel).
func (d *dialogs) setAccept(accept bool) {
	d.mu.Lock()
	d.accept = accept
	d.mu.Unlock()
}

// count is how many dialogs were answered.
func (d *dialogs) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.msgs)
}

// wait waits (within browserWait) until the tab has opened n dialogs and
// returns the n-th one's message.
func (d *dialogs) wait(t testing.TB, n int) string {
	t.Helper()
	deadline := time.Now().Add(browserWait)
	for d.count() < n {
		if time.Now().After(deadline) {
			t.Fatalf("browser: dialog %d did not open within %s (%d opened)", n, browserWait, d.count())
		}
		time.Sleep(10 * time.Millisecond) // polling what the listener recorded
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.msgs[n-1]
}

// cookie returns the value of the tab's cookie named name for the current
// page ("" when it has none), read over the DevTools protocol: an HttpOnly
// cookie the page itself cannot see.
func (tb *tab) cookie(name string) string {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, browserWait)
	defer cancel()
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{})
	if err != nil {
		tb.t.Fatalf("browser: cookies: %v", err)
	}
	for _, c := range res.Cookies {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

// consoleHub is a hub serving in this process for the browser tests.
type consoleHub struct {
	URL   string // http://127.0.0.1:PORT
	Token string // the admin token
	Dir   datadir.Dir
	// Database is the URL of the hub's database (a second handle may be
	// opened on it, as an agent process would).
	Database string
}

// startHub runs hub.Run on a fresh data directory and a fresh database of
// the named backend ("sqlite" or "postgres": a scratch schema, skipped
// without CKS_TEST_DATABASE_URL) with the settings of the environment env
// (config.ParseHub, config.ParseHTTP), and stops it when t ends.
func startHub(t testing.TB, backendName string, env map[string]string) consoleHub {
	t.Helper()
	dir := datadir.Dir(t.TempDir())
	db := dir.DatabaseURL()
	if backendName == "postgres" {
		db = backendtest.PostgresURL(t)
	}
	cfg := hub.Config{DataDir: dir, DatabaseURL: db, Listen: "127.0.0.1:0", Version: "v-test",
		Logger:          slog.New(slog.NewTextHandler(io.Discard, nil)),
		ShutdownTimeout: 5 * time.Second, WatchInterval: 200 * time.Millisecond}
	getenv := func(k string) string { return env[k] }
	var err error
	if cfg.Settings, err = config.ParseHub(getenv); err != nil {
		t.Fatal(err)
	}
	if cfg.HTTP, err = config.ParseHTTP(getenv); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan hub.Ready, 1)
	done := make(chan error, 1)
	go func() { done <- hub.Run(ctx, cfg, func(r hub.Ready) { ready <- r }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("hub.Run: %v", err)
		}
	})
	select {
	case r := <-ready:
		tok, err := dir.ReadToken()
		if err != nil {
			t.Fatal(err)
		}
		return consoleHub{URL: r.URL, Token: tok, Dir: dir, Database: db}
	case err := <-done:
		t.Fatalf("hub.Run: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("the hub did not become ready within 60 s")
	}
	return consoleHub{}
}

// signIn signs the tab in to h with token, from the login form as a person
// would, and waits for the Agent Panel.
func (tb *tab) signIn(h consoleHub, token string) {
	tb.t.Helper()
	tb.do(
		chromedp.Navigate(h.URL+"/login"),
		waitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), token),
		chromedp.Submit(chromedp.ID("token")),
		waitVisible(chromedp.ID("processes-heading")),
	)
}

// api calls the hub's HTTP API with h's admin token: the tests' way of
// making what the pages then show, through the same operations.
func (h consoleHub) api(t testing.TB, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, h.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+h.Token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return res.StatusCode, string(b)
}

// host is h's host:port.
func (h consoleHub) host() string {
	u, _ := url.Parse(h.URL)
	return u.Host
}
