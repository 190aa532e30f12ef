package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Roles a provider may serve; Provider.Models maps a role to a model name.
const (
	RoleFast        = "fast"
	RoleLongContext = "long_context"
	RoleStrategic   = "strategic"
)

// Provider is one OpenAI-compatible endpoint.
type Provider struct {
	Name      string            `json:"name"`
	BaseURL   string            `json:"base_url"`
	APIKeyEnv string            `json:"api_key_env"` // the key is read from this variable; never logged, never in errors
	Models    map[string]string `json:"models"`      // role -> model
	Free      bool              `json:"free"`
	RateLimit string            `json:"rate_limit"` // "30/10m": at most 30 requests per 10 minutes; "" = none
	Timeout   time.Duration     `json:"-"`          // per request (first byte and whole stream); DefaultTimeout when zero
	// StructuredOutput is "json_schema" when the provider takes
	// response_format {"type":"json_schema"} (vLLM, llama.cpp's server,
	// Ollama, hosted APIs), "" or "none" when it does not.
	StructuredOutput string `json:"structured_output,omitempty"`
}

// Config lists the providers the router may use.
type Config struct {
	Providers []Provider `json:"providers"`
	MaskPII   bool       `json:"mask_pii"` // mask e-mails and phones before sending to non-local providers
	// Roles are the generation settings per role; a role or field left out
	// takes DefaultRoles'. The router fills a request's zero fields from them.
	Roles map[string]RoleSettings `json:"roles,omitempty"`
}

// Summary names the providers of c, "name base_url" each (API keys left
// out): what a running system records of them and a client compares with
// its own. Empty, not nil, when c is nil or has none.
func (c *Config) Summary() []string {
	out := []string{}
	if c == nil {
		return out
	}
	for _, p := range c.Providers {
		out = append(out, p.Name+" "+p.BaseURL)
	}
	return out
}

// RoleSettings bound one role's generation: every request of the role
// carries max_tokens, temperature and stop.
type RoleSettings struct {
	// MaxTokens is the generation budget (max_tokens); a stream that runs
	// past it is cut by the client and returned as is (finish "length").
	MaxTokens int `json:"max_tokens,omitempty"`
	// Temperature is sent as temperature (0 to 2).
	Temperature *float64 `json:"temperature,omitempty"`
	// Stop ends the generation at any of these strings (OpenAI "stop", at
	// most 4).
	Stop []string `json:"stop,omitempty"`
}

// DefaultRoles are the generation settings a role gets when the config
// says nothing: answers (fast, long_context) are bounded and stop when the
// model starts to invent another question or context; strategic calls
// (query rewriting, translation, follow-ups) are short.
func DefaultRoles() map[string]RoleSettings {
	t := func(v float64) *float64 { return &v }
	answerStop := []string{"\nQuestion:", "<context"}
	return map[string]RoleSettings{
		RoleFast:        {MaxTokens: 1024, Temperature: t(0.2), Stop: answerStop},
		RoleLongContext: {MaxTokens: 2048, Temperature: t(0.2), Stop: answerStop},
		RoleStrategic:   {MaxTokens: 256, Temperature: t(0.3)},
	}
}

// RoleSettings returns the settings of role: the config's, with the fields
// it leaves out taken from DefaultRoles.
func (c Config) RoleSettings(role string) RoleSettings {
	s := DefaultRoles()[role]
	if o, ok := c.Roles[role]; ok {
		if o.MaxTokens > 0 {
			s.MaxTokens = o.MaxTokens
		}
		if o.Temperature != nil {
			s.Temperature = o.Temperature
		}
		if o.Stop != nil {
			s.Stop = o.Stop
		}
	}
	return s
}

// maxStop is how many stop strings the OpenAI API takes.
const maxStop = 4

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs []error
	if len(c.Providers) == 0 {
		errs = append(errs, errors.New("no providers"))
	}
	seen := map[string]bool{}
	for i, p := range c.Providers {
		name := p.Name
		if name == "" {
			name = fmt.Sprintf("#%d", i)
			errs = append(errs, fmt.Errorf("provider %s: name is empty", name))
		} else if seen[name] {
			errs = append(errs, fmt.Errorf("provider %s: duplicate name", name))
		}
		seen[name] = true
		if u, err := url.Parse(p.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("provider %s: base_url %q is not an http(s) URL", name, p.BaseURL))
		}
		if len(p.Models) == 0 {
			errs = append(errs, fmt.Errorf("provider %s: no models", name))
		}
		for role, m := range p.Models {
			if strings.TrimSpace(m) == "" {
				errs = append(errs, fmt.Errorf("provider %s: role %s has an empty model", name, role))
			}
		}
		if p.RateLimit != "" {
			if _, _, err := ParseRateLimit(p.RateLimit); err != nil {
				errs = append(errs, fmt.Errorf("provider %s: %w", name, err))
			}
		}
		if p.Timeout < 0 {
			errs = append(errs, fmt.Errorf("provider %s: negative timeout %s", name, p.Timeout))
		}
		switch p.StructuredOutput {
		case "", "none", "json_schema":
		default:
			errs = append(errs, fmt.Errorf("provider %s: structured_output %q: want \"json_schema\" or \"none\"", name, p.StructuredOutput))
		}
	}
	roles := make([]string, 0, len(c.Roles))
	for role := range c.Roles {
		roles = append(roles, role)
	}
	sort.Strings(roles)
	for _, role := range roles {
		rs := c.Roles[role]
		if _, known := DefaultRoles()[role]; !known {
			errs = append(errs, fmt.Errorf("roles: unknown role %q (want fast, long_context or strategic)", role))
		}
		if rs.MaxTokens < 0 {
			errs = append(errs, fmt.Errorf("roles: %s: negative max_tokens %d", role, rs.MaxTokens))
		}
		if rs.Temperature != nil && (*rs.Temperature < 0 || *rs.Temperature > 2) {
			errs = append(errs, fmt.Errorf("roles: %s: temperature %g is outside 0..2", role, *rs.Temperature))
		}
		if len(rs.Stop) > maxStop {
			errs = append(errs, fmt.Errorf("roles: %s: %d stop strings, at most %d", role, len(rs.Stop), maxStop))
		}
	}
	return errors.Join(errs...)
}

// ParseRateLimit reads "N/period", where period is a Go duration ("10m",
// "1h30m") or a bare unit ("s", "m", "h" meaning one of it).
func ParseRateLimit(s string) (n int, per time.Duration, err error) {
	count, period, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return 0, 0, fmt.Errorf("rate limit %q: want N/period like 30/10m", s)
	}
	n, err = strconv.Atoi(strings.TrimSpace(count))
	if err != nil || n <= 0 {
		return 0, 0, fmt.Errorf("rate limit %q: count must be a positive integer", s)
	}
	period = strings.TrimSpace(period)
	if period != "" && (period[0] < '0' || period[0] > '9') {
		period = "1" + period
	}
	per, err = time.ParseDuration(period)
	if err != nil || per <= 0 {
		return 0, 0, fmt.Errorf("rate limit %q: period must be a positive duration", s)
	}
	return n, per, nil
}

// Environment variables read by FromEnv.
const (
	EnvBaseURL = "EXOCORTEX_LLM_BASE_URL"
	EnvAPIKey  = "EXOCORTEX_LLM_API_KEY"
	EnvModel   = "EXOCORTEX_LLM_MODEL"
	// EnvStructuredOutput is the provider's structured_output
	// ("json_schema" when it takes response_format json_schema).
	EnvStructuredOutput = "EXOCORTEX_LLM_STRUCTURED_OUTPUT"
)

// FromEnv builds a one-provider config from EXOCORTEX_LLM_BASE_URL,
// EXOCORTEX_LLM_API_KEY and EXOCORTEX_LLM_MODEL (used for every role).
// ok is false when the base URL is unset. A local base URL counts as free.
func FromEnv() (Config, bool) {
	base := strings.TrimSpace(os.Getenv(EnvBaseURL))
	if base == "" {
		return Config{}, false
	}
	model := strings.TrimSpace(os.Getenv(EnvModel))
	models := map[string]string{}
	if model != "" {
		models = map[string]string{RoleFast: model, RoleLongContext: model, RoleStrategic: model}
	}
	return Config{Providers: []Provider{{
		Name:      "env",
		BaseURL:   base,
		APIKeyEnv: EnvAPIKey,
		Models:    models,
		Free:      IsLocal(base),

		StructuredOutput: strings.TrimSpace(os.Getenv(EnvStructuredOutput)),
	}}}, true
}

type fileProvider struct {
	Provider
	Timeout string `json:"timeout"`
}

type fileConfig struct {
	Providers []fileProvider          `json:"providers"`
	MaskPII   bool                    `json:"mask_pii"`
	Roles     map[string]RoleSettings `json:"roles"`
}

// LoadConfig reads a JSON config file: {"mask_pii": true, "providers":
// [{"name", "base_url", "api_key_env", "models": {"fast": "..."}, "free",
// "rate_limit": "30/10m", "timeout": "30s", "structured_output": "json_schema"}],
// "roles": {"fast": {"max_tokens": 1024, "temperature": 0.2, "stop": ["..."]}}},
// then validates it.
func LoadConfig(path string) (Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("load llm config: %w", err)
	}
	var fc fileConfig
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&fc); err != nil {
		return Config{}, fmt.Errorf("load llm config %s: %w", path, err)
	}
	cfg := Config{MaskPII: fc.MaskPII, Roles: fc.Roles}
	var errs []error
	for i, fp := range fc.Providers {
		p := fp.Provider
		if fp.Timeout != "" {
			d, err := time.ParseDuration(fp.Timeout)
			if err != nil {
				errs = append(errs, fmt.Errorf("provider %d (%s): timeout: %w", i, p.Name, err))
			}
			p.Timeout = d
		}
		cfg.Providers = append(cfg.Providers, p)
	}
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("load llm config %s: %w", path, err)
	}
	return cfg, nil
}

// IsLocal reports whether baseURL points at this machine (localhost,
// 127.0.0.1 or ::1); such providers receive unmasked text.
func IsLocal(baseURL string) bool {
	u, err := url.Parse(baseURL)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && (ip.Equal(net.IPv4(127, 0, 0, 1)) || ip.Equal(net.IPv6loopback))
}
