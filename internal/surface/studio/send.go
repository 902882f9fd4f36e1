package studio

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
	"sync"
)

// minCompressed is the smallest body worth compressing: below it gzip's
// header and the CPU cost more than they save.
const minCompressed = 1024

var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

// send writes body, rendered HTML answering r with status, as cheaply as
// the client allows. A 200 carries an ETag of its content: a request whose
// If-None-Match names it (a live region asking again, studio.js) gets a
// 304 with no body. A body the client takes gzipped (Accept-Encoding) is
// sent compressed. A board open through a burst of a thousand tasks fetched
// 15.6 MB of HTML in a minute before (issue 39); the live regions now also
// refresh at most once a data-live-min-ms.
func send(w http.ResponseWriter, r *http.Request, status int, body []byte) {
	h := w.Header()
	if status == http.StatusOK {
		sum := sha256.Sum256(body)
		etag := `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`
		h.Set("ETag", etag)
		if matchesETag(r.Header.Get("If-None-Match"), etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	h.Add("Vary", "Accept-Encoding")
	if len(body) < minCompressed || !acceptsGzip(r.Header.Get("Accept-Encoding")) {
		w.WriteHeader(status)
		_, _ = w.Write(body) // a failed write means the client went away
		return
	}
	var buf bytes.Buffer
	zw := gzipWriters.Get().(*gzip.Writer)
	zw.Reset(&buf)
	_, _ = zw.Write(body) // into memory
	_ = zw.Close()
	gzipWriters.Put(zw)
	h.Set("Content-Encoding", "gzip")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// matchesETag reports whether the If-None-Match header value names etag
// (or is "*").
func matchesETag(header, etag string) bool {
	for t := range strings.SplitSeq(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}

// acceptsGzip reports whether an Accept-Encoding header value takes gzip
// (not refused with q=0).
func acceptsGzip(header string) bool {
	for c := range strings.SplitSeq(header, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(c), ";")
		if strings.EqualFold(strings.TrimSpace(name), "gzip") {
			q := strings.ReplaceAll(params, " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}
