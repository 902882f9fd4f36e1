package config_test

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks/internal/config"
)

func env(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }

// TestParseHTTPSettings: CKS_HTTP_* and CKS_MCP_* set the hub's
// server's bounds (0 connections per address: no cap); a bad value names
// its variable.
func TestParseHTTPSettings(t *testing.T) {
	cases := []struct {
		env     map[string]string
		want    config.HTTP
		wantErr string
	}{
		{env: nil, want: config.HTTP{}},
		{env: map[string]string{"CKS_HTTP_READ_TIMEOUT": "5s", "CKS_HTTP_WRITE_TIMEOUT": "2m", "CKS_HTTP_IDLE_TIMEOUT": "1m", "CKS_HTTP_MAX_CONNS_PER_IP": "10"},
			want: config.HTTP{ReadTimeout: 5 * time.Second, WriteTimeout: 2 * time.Minute, IdleTimeout: time.Minute, MaxConnsPerIP: 10}},
		{env: map[string]string{"CKS_HTTP_MAX_CONNS_PER_IP": "0"}, want: config.HTTP{MaxConnsPerIP: -1}},
		{env: map[string]string{"CKS_HTTP_MAX_CONNS_PER_IP": "-3"}, wantErr: "CKS_HTTP_MAX_CONNS_PER_IP"},
		{env: map[string]string{"CKS_HTTP_WRITE_TIMEOUT": "soon"}, wantErr: "CKS_HTTP_WRITE_TIMEOUT"},
		{env: map[string]string{"CKS_HTTP_READ_TIMEOUT": "0s"}, wantErr: "CKS_HTTP_READ_TIMEOUT"},
		{env: map[string]string{"CKS_HTTP_SECURE_COOKIE": "true", "CKS_HTTP_TRUSTED_PROXIES": " 10.0.0.5, 192.168.0.0/16,::1"},
			want: config.HTTP{SecureCookie: true, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.5/32"),
				netip.MustParsePrefix("192.168.0.0/16"), netip.MustParsePrefix("::1/128")}}},
		{env: map[string]string{"CKS_HTTP_SECURE_COOKIE": "sometimes"}, wantErr: "CKS_HTTP_SECURE_COOKIE"},
		{env: map[string]string{"CKS_HTTP_TRUSTED_PROXIES": "10.0.0.5,proxy.internal"}, wantErr: "CKS_HTTP_TRUSTED_PROXIES"},
	}
	for _, c := range cases {
		got, err := config.ParseHTTP(env(c.env))
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%v: err %v, want one naming %s", c.env, err, c.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%v: %+v %v, want %+v", c.env, got, err, c.want)
		}
	}
}
