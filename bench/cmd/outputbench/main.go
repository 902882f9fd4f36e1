// Command outputbench measures live output (issue 43 item 3) over a hub's
// HTTP API served in this process: append_output throughput and latency
// with many agents appending at once, each to the task it holds, and the
// follow latency — from an append's call to the moment a follower of the
// task (GET /v1/tasks/ID/output?follow=1) reads the chunk — under that load
// and under a light one.
//
//	cd bench && go run ./cmd/outputbench [-db URL] [-agents 64] [-duration 10s]
//
// Without -db it runs on a fresh SQLite file.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/client"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/ledger"
	"github.com/cks-dev/cks/internal/surface/api"
)

func main() {
	db := flag.String("db", "", "database URL (default: a fresh SQLite file)")
	agents := flag.Int("agents", 64, "agents appending at once, each to its own task")
	followers := flag.Int("followers", 8, "of those tasks, how many have a follower")
	duration := flag.Duration("duration", 10*time.Second, "how long each run appends")
	chunk := flag.Int("chunk", 200, "bytes of text per chunk")
	flag.Parse()
	if err := run(*db, *agents, *followers, *duration, *chunk); err != nil {
		fmt.Fprintln(os.Stderr, "outputbench:", err)
		os.Exit(1)
	}
}

func run(db string, agents, followers int, d time.Duration, chunk int) error {
	ctx := context.Background()
	if db == "" {
		dir, err := os.MkdirTemp("", "outputbench")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		db = "sqlite:" + filepath.Join(dir, "cks.db")
	}
	st, err := backend.Open(ctx, db)
	if err != nil {
		return err
	}
	defer st.Close()
	url, stop, err := serve(st)
	if err != nil {
		return err
	}
	defer stop()
	_, tok, err := auth.CreateToken(ctx, st.Principals, st.Clock(), "outputbench", []cks.Grant{
		{Resource: auth.ResourceTasks, Permission: auth.PermRead}, {Resource: auth.ResourceTasks, Permission: auth.PermAppend}})
	if err != nil {
		return err
	}
	kind := strings.SplitN(db, ":", 2)[0]
	fmt.Printf("backend %s, %d agents over HTTP, %d-byte chunks, %s a run\n", kind, agents, chunk, d)
	if err := measure(ctx, st, url, tok, "load", agents, followers, 0, d, chunk); err != nil {
		return err
	}
	// Light: as many followed tasks, each appended to 20 times a second.
	return measure(ctx, st, url, tok, "light", followers, followers, 50*time.Millisecond, d, chunk)
}

// serve serves st's operations at 127.0.0.1 as a hub does (no sweepers, no studio).
func serve(st *backend.Backend) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	log := slog.New(slog.DiscardHandler)
	svc := &ops.Services{Tasks: st.Tasks, Principals: st.Principals, Clock: st.Clock(), Logger: log}
	a := api.New(api.Config{Services: svc, Logger: log, Version: "outputbench"})
	srv := &http.Server{Handler: a, ReadHeaderTimeout: 10 * time.Second}
	srv.RegisterOnShutdown(a.CloseStreams)
	go srv.Serve(ln) //nolint:errcheck // ErrServerClosed at the end
	return "http://" + ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx) //nolint:errcheck // the run is over
	}, nil
}

// measure runs n agents, each appending to a task it claimed (every pause,
// or as fast as it can), the first f tasks followed, for d.
func measure(ctx context.Context, st *backend.Backend, url, tok, name string, n, f int, pause, d time.Duration, chunk int) error {
	typ := "outputbench-" + name
	for range n {
		if _, _, err := st.Tasks.Enqueue(ctx, cks.NewTask{Type: typ, Title: "bench"}); err != nil {
			return err
		}
	}
	claimed, err := st.Tasks.Claim(ctx, ledger.ClaimParams{Worker: "bench", Types: []string{typ}, N: n, Lease: 30 * time.Minute})
	if err != nil || len(claimed) != n {
		return fmt.Errorf("claim %d: %d, %v", n, len(claimed), err)
	}
	var (
		mu       sync.Mutex
		calls    []time.Duration
		follows  []time.Duration
		failures atomic.Int64
		wg       sync.WaitGroup
	)
	fctx, cancelFollow := context.WithCancel(ctx)
	defer cancelFollow()
	var fwg sync.WaitGroup
	for _, c := range claimed[:min(f, n)] {
		fwg.Add(1)
		go func() {
			defer fwg.Done()
			cl := client.New(url, tok)
			cl.FollowOutput(fctx, c.ID, 0, func(ch cks.OutputChunk) { //nolint:errcheck // ends with fctx
				at, err := strconv.ParseInt(strings.SplitN(ch.Text, " ", 2)[0], 10, 64)
				if err != nil {
					return
				}
				lat := time.Since(time.Unix(0, at))
				mu.Lock()
				follows = append(follows, lat)
				mu.Unlock()
			})
		}()
	}
	time.Sleep(200 * time.Millisecond) // the followers connect (a benchmark's warm-up, not a test's wait)
	pad := strings.Repeat("x", max(0, chunk-21))
	end := time.Now().Add(d)
	start := time.Now()
	for _, c := range claimed {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := client.New(url, tok)
			var mine []time.Duration
			for time.Now().Before(end) {
				text := strconv.FormatInt(time.Now().UnixNano(), 10) + " " + pad + "\n"
				t0 := time.Now()
				_, err := cl.AppendOutput(ctx, c.ID, c.LeaseToken, "stdout", text)
				if err != nil {
					failures.Add(1)
					continue
				}
				mine = append(mine, time.Since(t0))
				if pause > 0 {
					time.Sleep(pause)
				}
			}
			mu.Lock()
			calls = append(calls, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	time.Sleep(500 * time.Millisecond) // the last chunks reach the followers
	cancelFollow()
	fwg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(calls) == 0 {
		return errors.New("no append succeeded")
	}
	fmt.Printf("%s: %d appends in %s = %.0f/s, failures %d; append p50 %s p99 %s; follow (%d followers, %d chunks seen) p50 %s p99 %s\n",
		name, len(calls), elapsed.Round(time.Millisecond), float64(len(calls))/elapsed.Seconds(), failures.Load(),
		pct(calls, 50), pct(calls, 99), min(f, n), len(follows), pct(follows, 50), pct(follows, 99))
	return nil
}

// pct is the p-th percentile of ds.
func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)].Round(10 * time.Microsecond)
}
