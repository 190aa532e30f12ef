package system

import (
	"context"
	"encoding/json"
	"path/filepath"
	"time"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/models/llm"
)

// SettingsKey is the KB_STATS key where a system running every stage
// (exocortex up) records the settings its queries are answered with, so that
// a client with settings of its own can say which are used.
const SettingsKey = "system_settings"

// Settings are a running system's query settings, without secrets.
type Settings struct {
	// DataDir is the running system's data directory.
	DataDir string `json:"data_dir"`
	// Providers are the language-model providers, "name base_url" each
	// (API keys are never recorded).
	Providers []string `json:"providers"`
	// ModelsDir is where its models are; NoModels when it runs without.
	ModelsDir string `json:"models_dir,omitempty"`
	NoModels  bool   `json:"no_models,omitempty"`
	// Search is the fullest retrieval mode its models allow.
	Search string `json:"search"`
	// AnswerDeadline is its answers' deadline ("60s"), AnswerDeadlineLocal
	// the deadline of its answers without a language model ("5s").
	AnswerDeadline      string `json:"answer_deadline,omitempty"`
	AnswerDeadlineLocal string `json:"answer_deadline_local,omitempty"`
}

// AnswerDeadline is the deadline answers get with cfg.
func AnswerDeadline(cfg answer.Config) time.Duration {
	if cfg.Deadline > 0 {
		return cfg.Deadline
	}
	return answer.DefaultDeadline
}

// answerDeadlineLocal is the deadline answers without a language model get
// with cfg.
func answerDeadlineLocal(cfg answer.Config) time.Duration {
	if cfg.LocalDeadline > 0 {
		return cfg.LocalDeadline
	}
	return answer.DefaultLocalDeadline
}

// ProviderSummary names the providers of c as Settings.Providers does.
func ProviderSummary(c *llm.Config) []string {
	out := []string{}
	if c == nil {
		return out
	}
	for _, p := range c.Providers {
		out = append(out, p.Name+" "+p.BaseURL)
	}
	return out
}

// settings is what this system answers queries with.
func (s *System) settings() Settings {
	st := Settings{DataDir: AbsPath(s.cfg.DataDir), Providers: ProviderSummary(s.llmCfg), NoModels: s.cfg.NoModels, Search: "lexical",
		AnswerDeadline: AnswerDeadline(s.cfg.Answer).String(), AnswerDeadlineLocal: answerDeadlineLocal(s.cfg.Answer).String()}
	if !s.cfg.NoModels {
		st.ModelsDir = AbsPath(s.modelsDir())
	}
	if s.Retriever != nil {
		st.Search = s.Retriever.Modes()
	}
	return st
}

// recordSettings writes the settings to KB_STATS (once: they do not change
// while the system runs).
func (s *System) recordSettings(ctx context.Context) {
	kv, err := s.Bus.KV(ctx, bus.BucketStats)
	if err != nil {
		return
	}
	raw, _ := json.Marshal(s.settings())
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := kv.Put(pctx, SettingsKey, raw); err != nil {
		s.cfg.Log.Warn().Err(err).Msg("record the system's settings for clients")
	}
}

// RunningSettings reads the settings a running system recorded; nil when it
// recorded none (a system of single-stage workers).
func RunningSettings(ctx context.Context, b *bus.Bus) (*Settings, error) {
	var st Settings
	if ok, err := readStat(ctx, b, SettingsKey, &st); !ok {
		return nil, err
	}
	return &st, nil
}

// AbsPath is p made absolute, or p as it is when that fails.
func AbsPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
