package backend_test

import (
	"context"
	"errors"
	neturl "net/url"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/driver/postgres"
)

// TestParseURL (issue 38.8): the one rule of what a database URL is — a
// libpq keyword/value connection string is Postgres (on main it became a
// SQLite file named after it, password included), a bare name with "=" or
// a URL of another scheme is refused naming the forms, and a path is
// SQLite (one from the root or from here even with "=").
func TestParseURL(t *testing.T) {
	for _, c := range []struct {
		url, dialect, target string
	}{
		{"postgres://u:pw@h:5432/db", "postgres", "postgres://u:pw@h:5432/db"},
		{"postgresql://h/db", "postgres", "postgresql://h/db"},
		{"host=db.example user=cks password=pw dbname=cks", "postgres", "host=db.example user=cks password=pw dbname=cks"},
		{"  dbname = cks  host=/run/postgresql ", "postgres", "  dbname = cks  host=/run/postgresql "},
		{"host=db password='a b' sslmode=require", "postgres", "host=db password='a b' sslmode=require"},
		{"sqlite:data/a=b.db", "sqlite", "data/a=b.db"},
		{"sqlite://x:y.db", "sqlite", "x:y.db"},
		{"/var/lib/cks/cks.db", "sqlite", "/var/lib/cks/cks.db"},
		{"cks.db", "sqlite", "cks.db"},
		{"./odd:name.db", "sqlite", "./odd:name.db"},
		{"/tmp/TestX_notify=true/001/cks.db", "sqlite", "/tmp/TestX_notify=true/001/cks.db"},
		{"../a=b/cks.db", "sqlite", "../a=b/cks.db"},
	} {
		d, target, err := backend.ParseURL(c.url)
		if err != nil || d != c.dialect || target != c.target {
			t.Errorf("ParseURL(%q) = %q, %q, %v; want %q, %q", c.url, d, target, err, c.dialect, c.target)
		}
	}
	for _, c := range []struct{ url, want string }{
		{"", "empty"},
		{"mysql://u@h/db", `unknown database scheme "mysql"`},
		{"postgres:db", `unknown database scheme "postgres"`},
		{"a=b", "sqlite:PATH"},
		{"host=db user=cks password=hunter2 dbname", "sqlite:PATH"},
		{"nosuchkey=1 other=2", "sqlite:PATH"},
		{"data/x=1.db", "sqlite:PATH"},
	} {
		_, _, err := backend.ParseURL(c.url)
		if !errors.Is(err, cks.ErrInvalid) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("ParseURL(%q) = %v; want ErrInvalid saying %q, no password", c.url, err, c.want)
		}
	}
}

// TestOpenConnStringIsPostgres (issue 38.8): a keyword/value connection
// string opens Postgres — the test server's, when there is one — and an
// unreachable one fails without creating any file in the working
// directory.
func TestOpenConnStringIsPostgres(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	conn := "host=127.0.0.1 port=1 user=cks password=hunter2 dbname=cks connect_timeout=1"
	_, err := backend.Open(context.Background(), conn)
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("Open of an unreachable connection string = %v; want an error without the password", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("opening %q made %d files, the first %q", conn, len(entries), entries[0].Name())
	}
	url := backendtest.PostgresURL(t)
	u, err := pgURL(url)
	if err != nil {
		t.Fatal(err)
	}
	st, err := backend.Open(context.Background(), u)
	if err != nil {
		t.Fatalf("Open(%q): %v", backend.RedactURL(u), err)
	}
	defer st.Close()
	if st.Dialect() != "postgres" {
		t.Fatalf("%q opened %s", backend.RedactURL(u), st.Dialect())
	}
}

// pgURL is the Postgres URL u as a keyword/value connection string.
func pgURL(u string) (string, error) {
	parsed, err := neturl.Parse(u)
	if err != nil {
		return "", err
	}
	kv := []postgres.Keyword{{Key: "host", Value: parsed.Hostname()}, {Key: "dbname", Value: strings.TrimPrefix(parsed.Path, "/")}}
	if p := parsed.Port(); p != "" {
		kv = append(kv, postgres.Keyword{Key: "port", Value: p})
	}
	if parsed.User != nil {
		kv = append(kv, postgres.Keyword{Key: "user", Value: parsed.User.Username()})
		if pw, ok := parsed.User.Password(); ok {
			kv = append(kv, postgres.Keyword{Key: "password", Value: pw})
		}
	}
	for k, vs := range parsed.Query() {
		kv = append(kv, postgres.Keyword{Key: k, Value: vs[0]})
	}
	return postgres.JoinKeywords(kv), nil
}

// TestRedactURL (issue 38.9): every form a database password may take is
// hidden, and nothing else is changed.
func TestRedactURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"postgres://cks:hunter2@db:5432/cks", "postgres://cks:xxxxx@db:5432/cks"},
		{"postgres://cks@db/cks?password=hunter2&sslmode=require", "postgres://cks@db/cks?password=xxxxx&sslmode=require"},
		{"postgres://cks@db/cks?sslmode=require&PASSWORD=hunter2#x", "postgres://cks@db/cks?sslmode=require&PASSWORD=xxxxx#x"},
		{"postgres://cks:hunter2@db:bad port/cks", "postgres://cks:xxxxx@db:bad port/cks"},
		{"postgres://cks:hun@ter2@db/cks", "postgres://cks:xxxxx@db/cks"},
		{"postgres://cks:hunter2/x@db/cks", "postgres://cks:xxxxx@db/cks"},
		{"host=db user=cks password=hunter2 dbname=cks", "host=db user=cks password=xxxxx dbname=cks"},
		{"host=db password = 'hunter2 x\\' y' dbname=cks", "host=db password = xxxxx dbname=cks"},
		{"host=db sslpassword=hunter2", "host=db sslpassword=xxxxx"},
		{"sqlite:/var/lib/cks/cks.db", "sqlite:/var/lib/cks/cks.db"},
		{"postgres://cks@db/cks", "postgres://cks@db/cks"},
		{"", ""},
	} {
		if got := backend.RedactURL(c.in); got != c.want || strings.Contains(got, "hunter2") {
			t.Errorf("RedactURL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzRedactURL: whatever a password is, in any form cks takes — a URL's
// user information, a password= parameter of its query, a keyword/value
// string's password, quoted — RedactURL never shows it, and ParseURL
// never panics on the string.
func FuzzRedactURL(f *testing.F) {
	f.Add("cks", "hunter2", "db:5432")
	f.Add("u:x", "p@ss/w:rd", "h")
	f.Add("", "a b c", "[::1]:5432")
	f.Fuzz(func(t *testing.T, user, pass, host string) {
		if len(pass) < 4 || strings.ContainsAny(pass, "&#'\\\x00\t\n\v\f\r ") || !utf8.ValidString(pass) {
			return
		}
		for _, u := range []string{
			"postgres://" + user + ":" + pass + "@" + host + "/cks",
			"postgres://" + user + "@" + host + "/cks?sslmode=require&password=" + pass,
			"host=" + host + " user=" + user + " password=" + pass + " dbname=cks",
			"host=" + host + " password='" + pass + " x' dbname=cks",
		} {
			backend.ParseURL(u) //nolint:errcheck // must not panic
			template := strings.ReplaceAll(u, pass, "")
			if strings.Contains(template, pass) || strings.Contains(user+host, pass) || strings.Contains("postgres://cks?sslmode=require&password=host=user=dbname=", pass) {
				continue // the password is also some other part of the string
			}
			if got := backend.RedactURL(u); strings.Contains(got, pass) {
				t.Fatalf("RedactURL(%q) = %q shows the password", u, got)
			}
		}
	})
}
