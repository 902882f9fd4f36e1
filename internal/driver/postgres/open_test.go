package postgres_test

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver/drivertest"
	"github.com/cks-dev/cks/internal/driver/postgres"
)

func TestOpenUnreachable(t *testing.T) {
	start := time.Now()
	_, err := postgres.Open(context.Background(), "postgres://postgres@127.0.0.1:1/x?sslmode=disable")
	if err == nil {
		t.Fatal("open of 127.0.0.1:1 succeeded")
	}
	msg := err.Error()
	if !strings.Contains(msg, "cannot reach 127.0.0.1:1") || strings.Contains(msg, "\n") {
		t.Fatalf("err = %q, want one line naming 127.0.0.1:1", msg)
	}
	if d := time.Since(start); d > postgres.ConnectTimeout+time.Second {
		t.Fatalf("refused connection took %v", d)
	}
}

// TestOpenHonoursShortContext points Open at a server that accepts the TCP
// connection and never answers: Open gives up when the caller's context
// ends, with one line naming the address.
func TestOpenHonoursShortContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	defer func() {
		ln.Close()
		<-done
		for _, c := range held {
			c.Close()
		}
	}()
	addr := ln.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = postgres.Open(ctx, "postgres://postgres@"+addr+"/x?sslmode=disable")
	if err == nil {
		t.Fatal("open of a silent server succeeded")
	}
	if !strings.Contains(err.Error(), "cannot reach "+addr) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err = %q, want one line naming %s", err, addr)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want it to unwrap to the context's deadline", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("open took %v with a 300ms context", d)
	}
}

func TestOpenMalformedURL(t *testing.T) {
	for _, u := range []string{"postgres://u@host:notaport/db", "postgres://u:secret@[::1/db"} {
		_, err := postgres.Open(context.Background(), u)
		if !errors.Is(err, cks.ErrInvalid) || !strings.Contains(err.Error(), "malformed database URL") {
			t.Errorf("Open(%q) = %v, want a malformed-URL ErrInvalid", u, err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("error leaks the password: %v", err)
		}
	}
}

func TestOpenMissingSchema(t *testing.T) {
	u, err := url.Parse(drivertest.PostgresURL(t)) // skips (or fails under CI) without a server
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", "cks_test_does_not_exist")
	u.RawQuery = q.Encode()
	_, err = postgres.Open(testCtx(t), u.String())
	if err == nil || !strings.Contains(err.Error(), "search_path") {
		t.Fatalf("open with a search_path naming no schema: err = %v, want a search_path error", err)
	}
}
