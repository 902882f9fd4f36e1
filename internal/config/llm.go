package config

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cks-dev/cks"
)

// The variables of LLM.
const (
	EnvLLMProvider = "CKS_LLM_PROVIDER"
	EnvLLMBaseURL  = "CKS_LLM_BASE_URL"
	EnvLLMModel    = "CKS_LLM_MODEL"
	EnvLLMAPIKey   = "CKS_LLM_API_KEY"
	EnvLLMTimeout  = "CKS_LLM_TIMEOUT"
)

// The providers of LLM.
const (
	ProviderOffline = "offline"
	ProviderOpenAI  = "openai"
)

// Defaults of LLM (llm.OpenAIConfig's are these).
const (
	DefaultLLMBaseURL = "https://api.openai.com/v1"
	DefaultLLMTimeout = 60 * time.Second
)

// LLM is the model the pipeline and the knowledge agents ask (llm.New
// builds it).
type LLM struct {
	// Provider is CKS_LLM_PROVIDER: ProviderOffline (rules, no network;
	// "" too) or ProviderOpenAI (any OpenAI-compatible server).
	Provider string
	// BaseURL is the server (CKS_LLM_BASE_URL, default
	// DefaultLLMBaseURL: a local server's URL works the same way), Model
	// the model's name (CKS_LLM_MODEL, required for openai), APIKey its
	// key (CKS_LLM_API_KEY, optional: local servers often need none).
	BaseURL, Model, APIKey string
	// Timeout bounds one HTTP attempt (CKS_LLM_TIMEOUT; 0:
	// DefaultLLMTimeout).
	Timeout time.Duration
}

// ParseLLM reads the model the environment asks for (getenv nil: an
// empty environment):
//
//   - CKS_LLM_PROVIDER: "offline" (the default when unset) or "openai";
//     the other variables are read only for openai;
//   - CKS_LLM_BASE_URL (an http(s) URL), CKS_LLM_MODEL (required),
//     CKS_LLM_API_KEY and CKS_LLM_TIMEOUT (per HTTP attempt: a Go duration
//     such as "90s", or seconds such as "90" or "0.5").
//
// A bad value is an error naming the variable.
func ParseLLM(getenv Getenv) (LLM, error) {
	getenv = orEmpty(getenv)
	switch strings.ToLower(strings.TrimSpace(getenv(EnvLLMProvider))) {
	case "", ProviderOffline:
		return LLM{Provider: ProviderOffline}, nil
	case ProviderOpenAI:
	default:
		return LLM{}, fmt.Errorf("%s: unknown provider %q (want \"offline\" or \"openai\")", EnvLLMProvider, getenv(EnvLLMProvider))
	}
	s := LLM{
		Provider: ProviderOpenAI,
		BaseURL:  strings.TrimSpace(getenv(EnvLLMBaseURL)),
		Model:    strings.TrimSpace(getenv(EnvLLMModel)),
		APIKey:   strings.TrimSpace(getenv(EnvLLMAPIKey)),
	}
	if s.Model == "" {
		return LLM{}, fmt.Errorf("%s: required when %s=openai", EnvLLMModel, EnvLLMProvider)
	}
	if s.BaseURL == "" {
		s.BaseURL = DefaultLLMBaseURL
	}
	if err := CheckBaseURL(s.BaseURL); err != nil {
		return LLM{}, fmt.Errorf("%s: %w", EnvLLMBaseURL, err)
	}
	if v := strings.TrimSpace(getenv(EnvLLMTimeout)); v != "" {
		d, err := cks.ParseDuration(v)
		if err != nil || d <= 0 {
			return LLM{}, fmt.Errorf("%s: %q is not a positive duration (e.g. 90s, or seconds: 90)", EnvLLMTimeout, v)
		}
		s.Timeout = d
	}
	return s, nil
}

// CheckBaseURL refuses a base URL of an OpenAI-compatible server that is
// not an http(s) URL with a host.
func CheckBaseURL(base string) error {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("base URL %q is not an http(s) URL", base)
	}
	return nil
}

// llmSettings are the model's.
func llmSettings() []Setting {
	readers := append(hubReaders(), agentWords("critic", "fork_resolution", "pipeline")...)
	return []Setting{
		{Env: EnvLLMProvider, Readers: readers, Doc: "the model: offline (rules, no network) or openai (any OpenAI-compatible server)",
			Default: ProviderOffline},
		{Env: EnvLLMBaseURL, Readers: readers, Doc: "the OpenAI-compatible server", Default: DefaultLLMBaseURL},
		{Env: EnvLLMModel, Readers: readers, Doc: "the model's name (required for openai)"},
		{Env: EnvLLMAPIKey, Readers: readers, Secret: true, Doc: "the server's API key (local servers often need none)"},
		{Env: EnvLLMTimeout, Readers: readers, Doc: "the timeout of one HTTP attempt", Default: strconv.Itoa(int(DefaultLLMTimeout/time.Second)) + "s"},
	}
}
