package auth

import (
	"strings"
	"testing"
)

// FuzzParseTaskToken: parseTaskToken accepts exactly what TaskToken writes
// — any bearer token a caller sends goes through it — and gives back the
// task and secret it was written from.
func FuzzParseTaskToken(f *testing.F) {
	secret := strings.Repeat("ab", taskSecretLen/2)
	for _, s := range []string{TaskToken(7, secret), "ckt_07_" + secret, "ckt_+7_" + secret, "ckt_7_" + secret + "0",
		"ckt_0_" + secret, "ckt_-1_" + secret, "ckt__" + secret, "cks_" + secret, "ckt_7_" + strings.Repeat("zz", taskSecretLen/2), ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		id, sec, ok := parseTaskToken(tok)
		if !ok {
			if id != 0 || sec != "" {
				t.Fatalf("%q refused but gave %d, %q", tok, id, sec)
			}
			return
		}
		if id <= 0 || len(sec) != taskSecretLen || TaskToken(id, sec) != tok {
			t.Fatalf("%q parsed as %d, %q, which write %q", tok, id, sec, TaskToken(id, sec))
		}
		if _, ok := taskPrincipal(taskPrincipalPrefix + tok[len(taskTokenPrefix):strings.LastIndex(tok, "_")]); !ok {
			t.Fatalf("the principal of %q is not a task's", tok)
		}
	})
}
