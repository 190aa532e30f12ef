package llm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseRateLimit(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		per  time.Duration
		fail bool
	}{
		{"30/10m", 30, 10 * time.Minute, false},
		{"5/s", 5, time.Second, false},
		{"100/1h30m", 100, 90 * time.Minute, false},
		{"30", 0, 0, true},
		{"0/1m", 0, 0, true},
		{"3/soon", 0, 0, true},
	}
	for _, tt := range tests {
		n, per, err := ParseRateLimit(tt.in)
		if (err != nil) != tt.fail || n != tt.n || per != tt.per {
			t.Errorf("ParseRateLimit(%q) = %d, %s, %v", tt.in, n, per, err)
		}
	}
}

func TestLoadConfigReadsDurationsAndReportsEveryProblem(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	os.WriteFile(good, []byte(`{"mask_pii": true, "providers": [{"name": "groq", "base_url": "https://api.groq.com/openai/v1",
		"api_key_env": "GROQ_KEY", "models": {"fast": "llama"}, "free": true, "rate_limit": "30/10m", "timeout": "30s"}]}`), 0o600)
	cfg, err := LoadConfig(good)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Providers[0]
	if !cfg.MaskPII || p.Timeout != 30*time.Second || p.Models["fast"] != "llama" || !p.Free || p.APIKeyEnv != "GROQ_KEY" {
		t.Fatalf("cfg = %+v", cfg)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"providers": [{"name": "a", "base_url": "ftp://x", "rate_limit": "x", "timeout": "soon"},
		{"name": "a", "base_url": "http://h", "models": {"fast": "m"}}]}`), 0o600)
	_, err = LoadConfig(bad)
	if err == nil {
		t.Fatal("want error")
	}
	for _, want := range []string{"timeout", "base_url", "no models", "rate limit", "duplicate"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv(EnvBaseURL, "")
	if _, ok := FromEnv(); ok {
		t.Fatal("ok without base URL")
	}
	t.Setenv(EnvBaseURL, "http://localhost:11434/v1")
	t.Setenv(EnvModel, "qwen")
	cfg, ok := FromEnv()
	if !ok || len(cfg.Providers) != 1 {
		t.Fatalf("cfg = %+v, ok = %v", cfg, ok)
	}
	p := cfg.Providers[0]
	if p.APIKeyEnv != EnvAPIKey || !p.Free || p.Models[RoleFast] != "qwen" || p.Models[RoleStrategic] != "qwen" || p.Models[RoleLongContext] != "qwen" ||
		p.StructuredOutput != "" {
		t.Fatalf("provider = %+v", p)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvStructuredOutput, "json_schema")
	if cfg, _ := FromEnv(); cfg.Providers[0].StructuredOutput != "json_schema" {
		t.Fatalf("structured output %q", cfg.Providers[0].StructuredOutput)
	}
	t.Setenv(EnvStructuredOutput, "yes")
	if cfg, _ := FromEnv(); cfg.Validate() == nil {
		t.Fatal("structured output \"yes\" is valid")
	}
}

func TestMaskPII(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"an email is masked", "write to ivan.petrov+kb@mail.example.ru now", "write to [email] now"},
		{"a Russian +7 number is masked", "call +7 912 345-67-89 today", "call [phone] today"},
		{"a Russian 8 (xxx) number is masked", "call 8 (912) 345 67 89", "call [phone]"},
		{"a compact Russian number is masked", "tel 89123456789.", "tel [phone]."},
		{"an international number is masked", "London +44 20 7946 0958 office", "London [phone] office"},
		{"a US number is masked", "ring +1 (415) 555-2671", "ring [phone]"},
		{"plain numbers and dates stay", "in 2024 we had 15 notes, 2024-10-12", "in 2024 we had 15 notes, 2024-10-12"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MaskPII(tt.in); got != tt.want {
				t.Errorf("MaskPII(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
