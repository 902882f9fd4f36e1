package client_test

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/cks-dev/cks/client"
)

// dir is a data directory in memory: "" for a file it does not hold.
type dir struct{ url, token string }

func (d dir) ReadURL() (string, error)   { return read(d.url, "hub.url") }
func (d dir) ReadToken() (string, error) { return read(d.token, "admin.token") }
func (d dir) URLFile() string            { return "D/hub.url" }
func (d dir) TokenFile() string          { return "D/admin.token" }
func (d dir) String() string             { return "D" }

func read(v, name string) (string, error) {
	if v == "" {
		return "", fmt.Errorf("read D/%s: %w", name, &fs.PathError{Op: "open", Path: "D/" + name, Err: fs.ErrNotExist})
	}
	return v, nil
}

// TestDiscover: flags and environment win; the data directory gives what
// they leave out — but its admin token goes only to its own hub: a URL
// given without a token gets the directory's token when it is the URL the
// directory holds, and otherwise an error saying to pass --token (the
// token is never sent to another hub).
func TestDiscover(t *testing.T) {
	const local, other = "http://127.0.0.1:7433", "http://10.0.0.9:7433"
	for _, c := range []struct {
		name             string
		url, token       string
		dir              dir
		wantURL, wantTok string
		wantErr          []string
	}{
		{"all from the directory", "", "", dir{local, "cks_admin"}, local, "cks_admin", nil},
		{"flags win", other, "cks_mine", dir{local, "cks_admin"}, other, "cks_mine", nil},
		{"token given, URL from the directory", "", "cks_mine", dir{local, "cks_admin"}, local, "cks_mine", nil},
		{"the directory's own hub named", local, "", dir{local, "cks_admin"}, local, "cks_admin", nil},
		{"its own hub, with a trailing slash", local + "/", "", dir{local, "cks_admin"}, local + "/", "cks_admin", nil},
		{"another hub, no token", other, "", dir{local, "cks_admin"}, "", "",
			[]string{"no token for the hub at " + other, "--token", "CKS_TOKEN", "cks token create", "its hub is " + local}},
		{"a hub, no hub in the directory", other, "", dir{"", "cks_admin"}, "", "",
			[]string{"no token for the hub at " + other, "--token", "no hub serves from it"}},
		{"no hub URL anywhere", "", "", dir{}, "", "", []string{"no hub URL", "--url", "CKS_URL", "D/hub.url"}},
		{"no token in the directory", "", "", dir{url: local}, "", "", []string{"no token", "--token", "D/admin.token"}},
		{"a bad URL", "localhost:7433", "t", dir{}, "", "", []string{`bad hub URL "localhost:7433"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			u, tok, err := client.Discover(c.url, c.token, c.dir)
			if c.wantErr == nil {
				if err != nil || u != c.wantURL || tok != c.wantTok {
					t.Fatalf("Discover = %q, %q, %v; want %q, %q", u, tok, err, c.wantURL, c.wantTok)
				}
				return
			}
			if err == nil {
				t.Fatalf("Discover = %q, %q; want an error", u, tok)
			}
			if strings.Contains(err.Error(), "cks_admin") {
				t.Errorf("the error shows the admin token: %v", err)
			}
			for _, w := range c.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
