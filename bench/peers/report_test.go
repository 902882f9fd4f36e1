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
