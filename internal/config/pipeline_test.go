package config_test

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/config"
)

func TestPipelineSettings(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	s, err := config.ParsePipeline(env(nil))
	if err != nil || s.InProcess || s.Corpus != "" || s.Workers != 1 || s.Poll != 30*time.Second || s.MaxRounds != 3 {
		t.Fatalf("defaults %+v, %v", s, err)
	}
	s, err = config.ParsePipeline(env(map[string]string{"CKS_PIPELINE_IN_PROCESS": "true", "CKS_PIPELINE_CORPUS": "/srv/docs",
		"CKS_PIPELINE_WORKERS": "4", "CKS_PIPELINE_OBJECT_POLL": "2.5", "CKS_PIPELINE_MAX_ROUNDS": "5"}))
	if err != nil || !s.InProcess || s.Corpus != "/srv/docs" || s.Workers != 4 || s.Poll != 2500*time.Millisecond || s.MaxRounds != 5 {
		t.Fatalf("from env %+v, %v", s, err)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	s.RegisterFlags(fs)
	if err := fs.Parse([]string{"--workers", "2", "--poll", "1m", "--corpus", "/x"}); err != nil || s.Workers != 2 || s.Poll != time.Minute || s.Corpus != "/x" || s.MaxRounds != 5 {
		t.Fatalf("flags %+v, %v", s, err)
	}
	for name, v := range map[string]string{"CKS_PIPELINE_IN_PROCESS": "maybe", "CKS_PIPELINE_WORKERS": "0",
		"CKS_PIPELINE_OBJECT_POLL": "soon", "CKS_PIPELINE_MAX_ROUNDS": "-1"} {
		if _, err := config.ParsePipeline(env(map[string]string{name: v})); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%s: %v, want an error naming it", name, v, err)
		}
	}
	if _, err := config.ParseHub(env(map[string]string{"CKS_PIPELINE_WORKERS": "x"})); err == nil {
		t.Error("ParseHub accepted a bad CKS_PIPELINE_WORKERS")
	}
}
