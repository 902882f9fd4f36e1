package backendtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/waitfor"
)

// Receiver is a real OTLP receiver: the OpenTelemetry Collector of
// tools/otelcol (its OTLP/HTTP receiver and file exporter), which .ci/run
// builds and names in CKS_OTELCOL. Without it the test is skipped, or
// fails under CI=true. It writes every span it receives to file, one OTLP
// JSON document a line.
type Receiver struct {
	// Endpoint is its OTLP/HTTP traces URL.
	Endpoint string
	file     string
}

// StartReceiver starts the collector on a free port of 127.0.0.1 and stops
// it when the test ends.
func StartReceiver(t *testing.T) Receiver {
	t.Helper()
	bin := os.Getenv("CKS_OTELCOL")
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but CKS_OTELCOL is unset: .ci/run builds tools/otelcol and names it there; the traces must be tested against it")
		}
		t.Skip("CKS_OTELCOL unset: build the OTLP receiver with `(cd tools/otelcol && go build -o /tmp/otelcol .)` and set CKS_OTELCOL=/tmp/otelcol")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	r := Receiver{Endpoint: "http://" + addr + "/v1/traces", file: filepath.Join(dir, "spans.jsonl")}
	cfg := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      http:
        endpoint: %s
exporters:
  file:
    path: %s
    flush_interval: 50ms
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [file]
`, addr, r.file)
	cfgFile := filepath.Join(dir, "otelcol.yaml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command(bin, "--config", cfgFile)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("the receiver's output:\n%s", out.String())
		}
	})
	// Ready once it answers an empty export.
	waitfor.Until(t, "the OTLP receiver to listen on "+addr, func() bool {
		select {
		case err := <-exited:
			t.Fatalf("the receiver exited: %v\n%s", err, out.String())
		default:
		}
		resp, err := http.Post(r.Endpoint, "application/json", strings.NewReader(`{"resourceSpans":[]}`))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return r
}

// Span is a span as the receiver wrote it (OTLP JSON).
type Span struct {
	TraceID      string `json:"traceId"`
	SpanID       string `json:"spanId"`
	ParentSpanID string `json:"parentSpanId"`
	Name         string `json:"name"`
	Start        string `json:"startTimeUnixNano"`
	End          string `json:"endTimeUnixNano"`
	Attributes   []Attr `json:"attributes"`
	Events       []struct {
		Name       string `json:"name"`
		Attributes []Attr `json:"attributes"`
	} `json:"events"`
	Status struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"status"`
}

// Attr is an attribute of a Span or of its events.
type Attr struct {
	Key   string         `json:"key"`
	Value map[string]any `json:"value"`
}

// Attr is the value of the attribute key as text ("" when absent; an
// array's values joined by commas).
func (s Span) Attr(key string) string {
	for _, a := range s.Attributes {
		if a.Key == key {
			for _, v := range a.Value {
				if arr, ok := v.(map[string]any); ok { // an arrayValue
					var parts []string
					vals, _ := arr["values"].([]any)
					for _, x := range vals {
						for _, y := range x.(map[string]any) {
							parts = append(parts, fmt.Sprint(y))
						}
					}
					return strings.Join(parts, ",")
				}
				return fmt.Sprint(v)
			}
		}
	}
	return ""
}

// Spans reads every span the receiver wrote so far of the service named
// service (service.name).
func (r Receiver) Spans(t *testing.T, service string) []Span {
	t.Helper()
	f, err := os.Open(r.file)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Span
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var doc struct {
			ResourceSpans []struct {
				Resource struct {
					Attributes []Attr `json:"attributes"`
				} `json:"resource"`
				ScopeSpans []struct {
					Spans []Span `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		}
		if err := json.Unmarshal(sc.Bytes(), &doc); err != nil {
			continue // a line being written
		}
		for _, rs := range doc.ResourceSpans {
			svc := Span{Attributes: rs.Resource.Attributes}.Attr("service.name")
			if svc != service {
				continue
			}
			for _, ss := range rs.ScopeSpans {
				out = append(out, ss.Spans...)
			}
		}
	}
	return out
}
