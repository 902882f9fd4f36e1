package postgres

import (
	"errors"
	"strings"
	"testing"

	"github.com/cks-dev/cks"
)

// TestSplitParams: the cks parameters of a URL are read and removed before
// pgx sees it; a bad value is refused naming the parameter.
func TestSplitParams(t *testing.T) {
	for _, tc := range []struct {
		url, rest string
		want      poolerConfig
		bad       string
	}{
		{url: "postgres://u@h:1/db?sslmode=disable", rest: "postgres://u@h:1/db?sslmode=disable"},
		{url: "postgres://u@h:6432/db?cks_pooler=transaction&sslmode=disable", rest: "postgres://u@h:6432/db?sslmode=disable",
			want: poolerConfig{transaction: true}},
		{url: "postgres://u@h:6432/db?cks_pooler=transaction&cks_listen=db.internal:5432",
			rest: "postgres://u@h:6432/db", want: poolerConfig{transaction: true, listenHost: "db.internal", listenPort: 5432}},
		{url: "postgres://u@h/db?cks_pooler=session", bad: "cks_pooler"},
		{url: "postgres://u@h/db?cks_listen=nohost", bad: "cks_listen"},
		{url: "postgres://u@h/db?cks_listen=h:0", bad: "cks_listen"},
		{url: "postgres://u@h/db?cks_listen=h:99999", bad: "cks_listen"},
	} {
		rest, pc, err := splitParams(tc.url)
		if tc.bad != "" {
			if !errors.Is(err, cks.ErrInvalid) || !strings.Contains(err.Error(), tc.bad) {
				t.Errorf("%s: %v, want invalid naming %s", tc.url, err, tc.bad)
			}
			continue
		}
		if err != nil || rest != tc.rest || pc != tc.want {
			t.Errorf("%s: %q %+v %v, want %q %+v", tc.url, rest, pc, err, tc.rest, tc.want)
		}
	}
}
