package llm

import (
	"fmt"
	"strings"

	"github.com/cks-dev/cks"
)

// FromEnv builds the Model the environment asks for:
//
//   - CKS_LLM_PROVIDER: "offline" (the default when unset) or "openai";
//   - for "openai": CKS_LLM_BASE_URL (default https://api.openai.com/v1; a
//     local server's URL works the same way), CKS_LLM_MODEL (required),
//     CKS_LLM_API_KEY (optional: local servers often need none) and
//     CKS_LLM_TIMEOUT (optional, per HTTP attempt: a Go duration such as
//     "90s", or seconds such as "90" or "0.5"; default 60 s).
//
// A bad value is an error naming the variable. getenv is os.Getenv in
// production.
func FromEnv(getenv func(string) string) (Model, error) {
	provider := strings.ToLower(strings.TrimSpace(getenv("CKS_LLM_PROVIDER")))
	switch provider {
	case "", "offline":
		return NewOffline(), nil
	case "openai":
	default:
		return nil, fmt.Errorf("CKS_LLM_PROVIDER: unknown provider %q (want \"offline\" or \"openai\")", getenv("CKS_LLM_PROVIDER"))
	}
	cfg := OpenAIConfig{
		BaseURL: strings.TrimSpace(getenv("CKS_LLM_BASE_URL")),
		Model:   strings.TrimSpace(getenv("CKS_LLM_MODEL")),
		APIKey:  strings.TrimSpace(getenv("CKS_LLM_API_KEY")),
	}
	if cfg.Model == "" {
		return nil, fmt.Errorf("CKS_LLM_MODEL: required when CKS_LLM_PROVIDER=openai")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultOpenAIBaseURL
	}
	if err := checkBaseURL(cfg.BaseURL); err != nil {
		return nil, fmt.Errorf("CKS_LLM_BASE_URL: %w", err)
	}
	if v := strings.TrimSpace(getenv("CKS_LLM_TIMEOUT")); v != "" {
		d, err := cks.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("CKS_LLM_TIMEOUT: %q is not a positive duration (e.g. 90s, or seconds: 90)", v)
		}
		cfg.Timeout = d
	}
	return NewOpenAI(cfg)
}
