package llm

import (
	"fmt"

	"github.com/cks-dev/cks/internal/config"
)

// New builds the Model s names (config.ParseLLM reads it from CKS_LLM_*):
// the offline model for the offline provider (or none), an OpenAI-compatible
// client for openai.
func New(s config.LLM) (Model, error) {
	switch s.Provider {
	case "", config.ProviderOffline:
		return NewOffline(), nil
	case config.ProviderOpenAI:
		return newOpenAI(OpenAIConfig{BaseURL: s.BaseURL, Model: s.Model, APIKey: s.APIKey, Timeout: s.Timeout})
	}
	return nil, fmt.Errorf("unknown model provider %q (want %q or %q)", s.Provider, config.ProviderOffline, config.ProviderOpenAI)
}
