package llm

import (
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/config"
)

// fromEnv is the model an environment asks for, as the commands build it.
func fromEnv(getenv func(string) string) (Model, error) {
	s, err := config.ParseLLM(getenv)
	if err != nil {
		return nil, err
	}
	return New(s)
}

// TestFromEnv: CKS_LLM_* make the model they name; a bad value is an
// error naming its variable.
func TestFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    string // Name of the model
		wantErr string // the variable the error names
		check   func(t *testing.T, m *openAI)
	}{
		{name: "default", env: nil, want: "offline"},
		{name: "offline", env: map[string]string{"CKS_LLM_PROVIDER": "Offline"}, want: "offline"},
		{name: "unknown provider", env: map[string]string{"CKS_LLM_PROVIDER": "anthropic"}, wantErr: "CKS_LLM_PROVIDER"},
		{name: "openai without model", env: map[string]string{"CKS_LLM_PROVIDER": "openai"}, wantErr: "CKS_LLM_MODEL"},
		{name: "openai defaults", env: map[string]string{"CKS_LLM_PROVIDER": "openai", "CKS_LLM_MODEL": "gpt-4o-mini"},
			want: "openai:gpt-4o-mini", check: func(t *testing.T, m *openAI) {
				if m.cfg.BaseURL != DefaultOpenAIBaseURL || m.cfg.APIKey != "" || m.cfg.Timeout != DefaultOpenAITimeout {
					t.Fatalf("cfg = %+v", m.cfg)
				}
			}},
		{name: "openai local server", env: map[string]string{"CKS_LLM_PROVIDER": "openai", "CKS_LLM_MODEL": "llama3",
			"CKS_LLM_BASE_URL": "http://127.0.0.1:8080/v1", "CKS_LLM_API_KEY": "k", "CKS_LLM_TIMEOUT": "90s"},
			want: "openai:llama3", check: func(t *testing.T, m *openAI) {
				if m.cfg.BaseURL != "http://127.0.0.1:8080/v1" || m.cfg.APIKey != "k" || m.cfg.Timeout != 90*time.Second {
					t.Fatalf("cfg = %+v", m.cfg)
				}
			}},
		{name: "timeout in seconds", env: map[string]string{"CKS_LLM_PROVIDER": "openai", "CKS_LLM_MODEL": "m", "CKS_LLM_TIMEOUT": "2.5"},
			want: "openai:m", check: func(t *testing.T, m *openAI) {
				if m.cfg.Timeout != 2500*time.Millisecond {
					t.Fatalf("timeout = %v", m.cfg.Timeout)
				}
			}},
		{name: "bad timeout", env: map[string]string{"CKS_LLM_PROVIDER": "openai", "CKS_LLM_MODEL": "m", "CKS_LLM_TIMEOUT": "soon"}, wantErr: "CKS_LLM_TIMEOUT"},
		{name: "zero timeout", env: map[string]string{"CKS_LLM_PROVIDER": "openai", "CKS_LLM_MODEL": "m", "CKS_LLM_TIMEOUT": "0"}, wantErr: "CKS_LLM_TIMEOUT"},
		{name: "bad base URL", env: map[string]string{"CKS_LLM_PROVIDER": "openai", "CKS_LLM_MODEL": "m", "CKS_LLM_BASE_URL": "localhost:8080"}, wantErr: "CKS_LLM_BASE_URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := fromEnv(func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Name() != tc.want {
				t.Fatalf("Name = %q, want %q", m.Name(), tc.want)
			}
			if tc.check != nil {
				tc.check(t, m.(*openAI))
			}
		})
	}
}
