package config

import (
	"fmt"
	"net/url"
	"strings"
)

// The OpenTelemetry variables a hub reads to export traces (issue 43 item
// 6; docs/tracing.md): the standard OTEL_* names, so that a collector's
// usual settings turn cks's traces on. The OpenTelemetry SDK reads the
// other standard variables itself (OTEL_EXPORTER_OTLP_HEADERS,
// OTEL_EXPORTER_OTLP_TIMEOUT, OTEL_TRACES_SAMPLER, OTEL_BSP_*,
// OTEL_RESOURCE_ATTRIBUTES, …) once tracing is on.
const (
	EnvTracesExporter       = "OTEL_TRACES_EXPORTER"
	EnvOTLPEndpoint         = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvOTLPTracesEndpoint   = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvOTLPProtocol         = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvOTLPTracesProtocol   = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvServiceName          = "OTEL_SERVICE_NAME"
	EnvSDKDisabled          = "OTEL_SDK_DISABLED"
	DefaultServiceName      = "cks"
	defaultOTLPHTTPEndpoint = "http://localhost:4318"
)

// Tracing is whether and where a hub (or an agent, which claims and ends
// attempts through a ledger of its own) exports its OpenTelemetry traces.
// Off by default: a hub exports only when OTEL_TRACES_EXPORTER=otlp, or
// when an OTLP endpoint is set and OTEL_TRACES_EXPORTER is not none; and
// never with OTEL_SDK_DISABLED=true. It exports OTLP over HTTP
// (http/protobuf) only.
type Tracing struct {
	// Enabled: the hub exports traces.
	Enabled bool
	// Endpoint is the URL the spans are posted to: the traces endpoint
	// (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) as given, else the OTLP
	// endpoint (OTEL_EXPORTER_OTLP_ENDPOINT) with /v1/traces, else
	// http://localhost:4318/v1/traces.
	Endpoint string
	// ServiceName is the service.name of the spans (OTEL_SERVICE_NAME,
	// default "cks").
	ServiceName string
}

// ParseTracing reads Tracing with getenv (nil: an empty environment); a
// bad value is an error naming the variable.
func ParseTracing(getenv Getenv) (Tracing, error) {
	getenv = orEmpty(getenv)
	t := Tracing{ServiceName: DefaultServiceName}
	if v := strings.TrimSpace(getenv(EnvServiceName)); v != "" {
		t.ServiceName = v
	}
	base, traces := strings.TrimSpace(getenv(EnvOTLPEndpoint)), strings.TrimSpace(getenv(EnvOTLPTracesEndpoint))
	switch v := strings.TrimSpace(getenv(EnvTracesExporter)); v {
	case "":
		t.Enabled = base != "" || traces != ""
	case "otlp":
		t.Enabled = true
	case "none":
	default:
		return t, fmt.Errorf("%s=%q: expected otlp or none (cks exports traces over OTLP only)", EnvTracesExporter, v)
	}
	switch v := strings.TrimSpace(getenv(EnvSDKDisabled)); strings.ToLower(v) {
	case "", "false":
	case "true":
		t.Enabled = false
	default:
		return t, fmt.Errorf("%s=%q: expected true or false", EnvSDKDisabled, v)
	}
	for _, name := range []string{EnvOTLPTracesProtocol, EnvOTLPProtocol} {
		if v := strings.TrimSpace(getenv(name)); v != "" && v != "http/protobuf" {
			return t, fmt.Errorf("%s=%q: cks exports OTLP over HTTP only: expected http/protobuf", name, v)
		}
	}
	switch {
	case traces != "":
		t.Endpoint = traces
	case base != "":
		t.Endpoint = strings.TrimSuffix(base, "/") + "/v1/traces"
	default:
		t.Endpoint = defaultOTLPHTTPEndpoint + "/v1/traces"
	}
	name := EnvOTLPTracesEndpoint
	if traces == "" {
		name = EnvOTLPEndpoint
	}
	if u, err := url.Parse(t.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return t, fmt.Errorf("%s: %q is no http(s) URL such as http://collector:4318", name, t.Endpoint)
	}
	return t, nil
}

// tracingSettings are the OTEL_* variables a hub and the agents read
// (ParseTracing): an agent claims and ends attempts through a ledger of
// its own, and records their spans as a hub does.
func tracingSettings() []Setting {
	hubs := append(hubReaders(), agentWords(AgentKinds()...)...)
	return []Setting{
		{Env: EnvTracesExporter, Readers: hubs, Default: "none unless an OTLP endpoint is set",
			Doc: "otlp: export OpenTelemetry traces of the tasks (their create, each attempt from claim to end; docs/tracing.md); " +
				"none: do not; unset: export when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set. " +
				"Off by default; the other standard OTEL_* variables (headers, timeout, sampler, batch) are the OpenTelemetry SDK's"},
		{Env: EnvOTLPEndpoint, Readers: hubs, Default: defaultOTLPHTTPEndpoint,
			Doc: "the OTLP/HTTP collector the traces go to (its /v1/traces); setting it turns tracing on"},
		{Env: EnvOTLPTracesEndpoint, Readers: hubs, Default: "OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces",
			Doc: "the full URL of the OTLP/HTTP traces endpoint, used as given; setting it turns tracing on"},
		{Env: EnvOTLPProtocol, Readers: hubs, Default: "http/protobuf",
			Doc: "the OTLP protocol: cks exports http/protobuf only"},
		{Env: EnvOTLPTracesProtocol, Readers: hubs, Default: "OTEL_EXPORTER_OTLP_PROTOCOL",
			Doc: "the OTLP protocol of the traces: http/protobuf only"},
		{Env: EnvServiceName, Readers: hubs,
			Doc:   "the service.name of the hub's spans",
			Value: func(v *Values) string { return v.Hub.Tracing.ServiceName }},
		{Env: EnvSDKDisabled, Readers: hubs, Default: "false", Doc: "true turns tracing off whatever else is set"},
	}
}
