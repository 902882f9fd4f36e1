package peers

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func TestSplice(t *testing.T) {
	section := beginMarker + "\nnew\n" + endMarker + "\n"
	for _, tc := range []struct {
		name, doc, want string
		fails           bool
	}{
		{name: "appended when absent", doc: "# Benchmarks\n\ntext\n\n\n", want: "# Benchmarks\n\ntext\n\n" + section},
		{name: "replaced in place", doc: "# B\n\n" + beginMarker + "\nold\nlines\n" + endMarker + "\n\n## After\n",
			want: "# B\n\n" + section + "\n## After\n"},
		{name: "replaced at the end", doc: "# B\n" + beginMarker + "\nold\n" + endMarker + "\n", want: "# B\n" + section},
		{name: "begin without end", doc: "# B\n" + beginMarker + "\nold\n", fails: true},
		{name: "end without begin", doc: "# B\nold\n" + endMarker + "\n", fails: true},
		{name: "end before begin", doc: endMarker + "\n" + beginMarker + "\n", fails: true},
		{name: "twice", doc: beginMarker + "\n" + endMarker + "\n" + beginMarker + "\n" + endMarker + "\n", fails: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := splice([]byte(tc.doc), section)
			if tc.fails {
				if err == nil {
					t.Fatalf("splice succeeded: %q", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("splice =\n%q\nwant\n%q", got, tc.want)
			}
			// Splicing again changes nothing: the section is regenerated in place.
			again, err := splice(got, section)
			if err != nil || !bytes.Equal(again, got) {
				t.Errorf("second splice = %q, %v; want it unchanged", again, err)
			}
		})
	}
}

// sampleReport is a report with two rounds of three systems on Postgres,
// latency and SQLite.
func sampleReport() Report {
	acct := func(stmts, commits int64) Accounting {
		return Accounting{HasStatements: true, Statements: stmts, HasServerStats: true, Commits: commits, WALSyncs: commits,
			RowsWritten: 3 * commits, WALBytes: 1000 * commits, ClientCPU: time.Second, HasServerCPU: true, ServerCPU: 2 * time.Second,
			WorkClientCPU: time.Second / 2, WorkServerCPU: 3 * time.Second / 2,
			Top: []Statement{{Query: "begin", Calls: commits}, {Query: "SELECT a | b", Calls: commits / 2, Rows: commits / 2}}}
	}
	run := func(system string, workers, round int, rate float64, a Accounting) Run {
		return Run{Backend: "postgres", System: system, Workers: workers, Round: round, Jobs: 1000,
			EnqueueSeconds: 0.5, WorkSeconds: 1000 / rate, JobsPerSecond: rate, Acct: a}
	}
	rep := Report{Started: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), Finished: time.Date(2026, 12, 1, 12, 10, 0, 0, time.UTC),
		Host:   Host{OS: "linux", Arch: "amd64", CPUs: 2, Go: "go1.26.8", River: "v0.51.2", Postgres: "15.18", OwnCluster: true, LoadBefore: 0.2, LoadAfter: 0.3},
		Config: Config{Rounds: 2, Jobs: 1000, Batch: 10, RiverInsertBatch: 1000, LatencySamples: 200, LatencyGap: 100 * time.Millisecond}}
	for round := 1; round <= 2; round++ {
		rep.Postgres = append(rep.Postgres,
			run(SystemRiver, 100, round, 10000+float64(round), acct(40, 50)),
			run(SystemRiver, 1000, round, 20000, acct(20, 25)),
			run(SystemCks, 4, round, 1500*float64(round), acct(14500, 2100)),
			run(SystemCksAgent, 4, round, 1000, acct(24000, 4000)))
		sq := run(SystemCks, 1, round, 4000, Accounting{ClientCPU: time.Second})
		sq.Backend = "sqlite"
		ceil := run(SystemSQLiteCeiling, 1, round, 40000, Accounting{ClientCPU: time.Second})
		ceil.Backend, ceil.EnqueueSeconds = "sqlite", 0
		rep.SQLite = append(rep.SQLite, ceil, sq)
	}
	rep.Latency = []Latency{
		{System: SystemRiver, Setting: "default", Detail: "FetchCooldown 100ms", Workers: 100, Samples: 200,
			ClaimP50: 95 * time.Millisecond, ClaimP99: 985 * time.Millisecond, ClaimMax: time.Second,
			StartP50: 96 * time.Millisecond, StartP99: 986 * time.Millisecond, StartMax: time.Second},
		{System: SystemCks, Setting: "default", Detail: "tasks_ready notification", Workers: 4, Samples: 200,
			ClaimP50: time.Millisecond, ClaimP99: 3 * time.Millisecond, ClaimMax: 4 * time.Millisecond,
			StartP50: 1100 * time.Microsecond, StartP99: 3100 * time.Microsecond, StartMax: 5 * time.Millisecond},
	}
	return rep
}

func TestMarkdown(t *testing.T) {
	md := Markdown(sampleReport())
	if !strings.HasPrefix(md, beginMarker+"\n") || !strings.HasSuffix(md, endMarker+"\n") {
		t.Fatalf("the section is not between its markers:\n%s", md)
	}
	for _, want := range []string{
		// min / median / max and the rounds of one system.
		"| River v0.51.2, 100 workers | 10,001 / 10,001 / 10,002 | 10,001, 10,002 | 2,000 |",
		"| cks claim→complete, 4 workers | 1,500 / 2,250 / 3,000 | 1,500, 3,000 | 2,000 |",
		// the ratio uses each system's best worker count in the round.
		"| 1 | 20,000 | 1,500 | 0.075 | 1,000 | 0.050 |",
		"| 2 | 20,000 | 3,000 | 0.150 | 1,000 | 0.050 |",
		// per-task accounting: totals over the rounds ÷ jobs.
		"| cks claim→complete, 4 workers | 14.5 | 2.10 | 2.10 | 6.30 | 2,100 | 1,000 µs | 2,000 µs | 3,000 µs |",
		"| River, 1,000 workers | 0.02 | 0.025 | 0.025 | 0.075 | 25.0 | 1,000 µs | 2,000 µs | 3,000 µs |",
		// statements per task, with the table's pipe escaped.
		"| cks claim→complete | `SELECT a \\| b` | 1.05 | 1.05 |",
		"| River v0.51.2, default (FetchCooldown 100ms) | 100 | 95.0 ms / 985 ms / 1000 ms | 96.0 ms / 986 ms / 1000 ms |",
		"| cks claim loop (tasks_ready notification) | 4 | 1.00 ms / 3.00 ms / 4.00 ms | 1.10 ms / 3.10 ms / 5.00 ms |",
		"| raw SQLite single-row commits | 40,000 / 40,000 / 40,000 | 40,000, 40,000 | – | 1,000 µs |",
		"cks's best median is 0.100 of the commit ceiling's median",
		"(" + throughputSVG + ")", "(" + latencySVG + ")",
		"a throwaway cluster the command started",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the Markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "machine was shared") {
		t.Error("a quiet machine (load 0.2) is called shared")
	}
	busy := sampleReport()
	busy.Host.LoadAfter = 8
	if !strings.Contains(Markdown(busy), "machine was shared") {
		t.Error("a load of 8 on 2 CPUs is not flagged")
	}
}

func TestChartsAreWellFormedSVG(t *testing.T) {
	charts := Charts(sampleReport())
	for _, name := range []string{throughputSVG, latencySVG} {
		svg, ok := charts[name]
		if !ok {
			t.Fatalf("no chart %s", name)
		}
		rects, texts := 0, []string{}
		dec := xml.NewDecoder(bytes.NewReader(svg))
		inText := false
		for {
			tok, err := dec.Token()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s is not well-formed XML: %v\n%s", name, err, svg)
			}
			switch tok := tok.(type) {
			case xml.StartElement:
				inText = tok.Name.Local == "text"
				if tok.Name.Local == "rect" {
					rects++
				}
			case xml.CharData:
				if inText {
					texts = append(texts, string(tok))
				}
			}
		}
		joined := strings.Join(texts, "\n")
		switch name {
		case throughputSVG:
			// background + 4 legend swatches + one bar per system (4 Postgres, 2 SQLite).
			if rects != 1+4+6 {
				t.Errorf("%s has %d rects, want 11", name, rects)
			}
			for _, want := range []string{"River, 1,000 workers", "cks agent path, 4 workers", "20,000", "SQLite"} {
				if !strings.Contains(joined, want) {
					t.Errorf("%s lacks the text %q", name, want)
				}
			}
		case latencySVG:
			if rects != 1+3+4 {
				t.Errorf("%s has %d rects, want 8", name, rects)
			}
			if !strings.Contains(joined, "95.0 ms / 985 ms") {
				t.Errorf("%s lacks River's p50 / p99", name)
			}
		}
	}
	if a, b := Charts(sampleReport()), Charts(sampleReport()); !bytes.Equal(a[throughputSVG], b[throughputSVG]) {
		t.Error("the chart is not deterministic")
	}
}

func TestChartScale(t *testing.T) {
	for _, tc := range []struct {
		c      chart
		lo, hi float64
	}{
		{chart{bars: []bar{{value: 18421, lo: 17000, hi: 20246}}}, 0, 25000},
		{chart{bars: []bar{{value: 3}}}, 0, 3},
		{chart{bars: []bar{{value: 1300, hi: 27000}}}, 0, 30000},
		{chart{log: true, bars: []bar{{value: 1.0, lo: 1.0, hi: 3.6}, {value: 95, hi: 985}}}, 1, 1000},
		{chart{log: true, bars: []bar{{value: 0.4, hi: 2}}}, 0.1, 10},
	} {
		lo, hi := tc.c.scale()
		if lo != tc.lo || hi != tc.hi {
			t.Errorf("scale(%+v) = %v..%v, want %v..%v", tc.c.bars, lo, hi, tc.lo, tc.hi)
		}
	}
}

// hubReport is sampleReport with the agents over HTTP and MCP in both
// rounds and a run of each system with retained jobs.
func hubReport() Report {
	rep := sampleReport()
	acct := func(commits int64) Accounting {
		return Accounting{HasStatements: true, Statements: 20 * commits, HasServerStats: true, Commits: 9 * commits, RowsWritten: 9 * commits,
			WALBytes: 4000 * commits, ClientCPU: 2 * time.Second, HasServerCPU: true, ServerCPU: 2 * time.Second}
	}
	var runs []Run
	for _, r := range rep.Postgres {
		runs = append(runs, r)
		if r.System == SystemCksAgent {
			for _, h := range []struct {
				system string
				rate   float64
			}{{SystemCksHTTP, 400}, {SystemCksMCP, 200}} {
				runs = append(runs, Run{Backend: "postgres", System: h.system, Workers: 64, Round: r.Round, Jobs: 1000,
					EnqueueSeconds: 0.5, WorkSeconds: 1000 / h.rate, JobsPerSecond: h.rate, Acct: acct(1000)})
			}
		}
	}
	rep.Postgres = runs
	rep.Config.Retained = 1_000_000
	for _, c := range []struct {
		system  string
		workers int
		rate    float64
	}{{SystemRiver, 1000, 10000}, {SystemCks, 4, 1800}, {SystemCksHTTP, 64, 300}} {
		a := acct(1000)
		a.RowsWritten, a.WALBytes = 5000, 6_000_000
		rep.Retained = append(rep.Retained, Run{Backend: "postgres", System: c.system, Workers: c.workers, Round: 1, Jobs: 1000,
			WorkSeconds: 1000 / c.rate, JobsPerSecond: c.rate, Acct: a, Retained: 1_000_000, LoadSeconds: 42})
	}
	return rep
}

// TestMarkdownHubPaths: the ratio table has a column pair per cks system
// run, the cost table a row per hub path, and the retained runs a table of
// their own beside the same system without.
func TestMarkdownHubPaths(t *testing.T) {
	md := Markdown(hubReport())
	for _, want := range []string{
		"| round | River best jobs/s | cks claim→complete best | / River | cks agent path best | / River | cks over HTTP best | / River | cks over MCP best | / River |",
		"| 1 | 20,000 | 1,500 | 0.075 | 1,000 | 0.050 | 400 | 0.020 | 200 | 0.010 |",
		"| cks agents over HTTP, 64 agents | 20.0 | 9.00 | 0 | 9.00 | 4,000 | 2,000 µs | 2,000 µs | 4,000 µs | – |",
		"### Postgres: with 1,000,000 completed jobs retained",
		// River at 1,000 workers: 20,000 jobs/s without, 10,000 with; rows 0.075 → 5.00 per task.
		"| River v0.51.2, 1,000 workers | 42 s | 20,000 | 10,000 | 0.500 | 0.075 / 5.00 | 25.0 / 6,000 | 3,000 µs / 4,000 µs |",
		// cks claim→complete at 4 workers: beside its run of the same round (1,500), not round 2's 3,000.
		"| cks claim→complete, 4 workers | 42 s | 1,500 | 1,800 | 1.200 |",
		"| cks agents over HTTP, 64 agents | 42 s | 400 | 300 | 0.750 | 9.00 / 5.00 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the Markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(Markdown(sampleReport()), "retained") {
		t.Error("a report without retained runs has a retained table")
	}
}

// TestSummary: the top section says the ratios to River, each system's cost
// per task at its best worker count, the retained runs, SQLite against its
// ceiling and the idle latency, between its own markers.
func TestSummary(t *testing.T) {
	rep := hubReport()
	rep.Latency = append(rep.Latency,
		Latency{System: SystemRiver, Setting: "tuned", StartP99: 6 * time.Millisecond},
		Latency{System: SystemCksAgent, Setting: "default", StartP99: 4500 * time.Microsecond})
	s := Summary(rep)
	if !strings.HasPrefix(s, summaryBegin+"\n") || !strings.HasSuffix(s, summaryEnd+"\n") {
		t.Fatalf("the summary is not between its markers:\n%s", s)
	}
	for _, want := range []string{
		// best median against best median: 2,250 / 20,000; per round 0.075, 0.150.
		"- **cks claim→complete 0.113× River** (best median against best median; best against best per round: 0.075, 0.150)",
		"- cks over HTTP 0.020× River",
		"- cks over MCP 0.010× River",
		"- With 1,000,000 completed jobs retained, each system's jobs/s over its run without just before: River 0.500, cks claim→complete 1.200, cks over HTTP 0.750",
		"- SQLite: cks 4,000 tasks/s, 0.100 of the raw commit ceiling measured in the same run (40,000 commits/s)",
		"- Idle enqueue→work start p99: River tuned 6.00 ms, cks agent path 4.50 ms",
		// The work phase: half the client's second and 1.5 of the server's two, over 2,000 jobs (River's two rounds).
		"| River, 1,000 workers | 20,000 | 1.000 | 1,000 µs | 2,000 µs | 500 µs + 1,500 µs | 0.025 | 0.02 | 0.075 | 25.0 |",
		"| cks claim→complete, 4 workers | 2,250 | 0.113 | 1,000 µs | 2,000 µs | 500 µs + 1,500 µs | 2.10 | 14.5 | 6.30 | 2,100 |",
		"| cks agents over MCP, 64 agents | 200 | 0.010 | 2,000 µs | 2,000 µs | – | 9.00 | 20.0 | 9.00 | 4,000 |",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the summary lacks %q:\n%s", want, s)
		}
	}
}

// TestSpliceSummary: the summary goes before the first second-level
// heading, and is replaced in place after that.
func TestSpliceSummary(t *testing.T) {
	section := summaryBegin + "\nnew\n" + summaryEnd + "\n"
	doc := "# Benchmarks\n\nIntro.\n\n## First\n\ntext\n"
	got, err := spliceSummary([]byte(doc), section)
	if err != nil {
		t.Fatal(err)
	}
	want := "# Benchmarks\n\nIntro.\n\n" + section + "\n## First\n\ntext\n"
	if string(got) != want {
		t.Fatalf("spliceSummary =\n%q\nwant\n%q", got, want)
	}
	again, err := spliceSummary(got, section)
	if err != nil || !bytes.Equal(again, got) {
		t.Errorf("second splice = %q, %v; want it unchanged", again, err)
	}
	newer, err := spliceSummary(got, summaryBegin+"\nnewer\n"+summaryEnd+"\n")
	if err != nil || strings.Contains(string(newer), "\nnew\n") || !strings.Contains(string(newer), "newer") {
		t.Errorf("replacing splice = %q, %v", newer, err)
	}
	if _, err := spliceSummary([]byte("# B\n"+summaryBegin+"\n## First\n"), section); err == nil {
		t.Error("a lone begin marker was spliced over")
	}
}
