package system

import (
	"context"
	"encoding/json"
	"path/filepath"
	"time"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/schemas"
)

// SettingsKey is the KB_STATS key where a system running every stage
// (exocortex up) records the settings its queries are answered with
// (schemas.SystemSettings), so that a client with settings of its own can
// say which are used.
const SettingsKey = "system_settings"

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

// settings is what this system answers queries with.
func (s *System) settings() schemas.SystemSettings {
	st := schemas.SystemSettings{DataDir: AbsPath(s.cfg.DataDir), Providers: s.llmCfg.Summary(), NoModels: s.cfg.NoModels, Search: "lexical",
		AnswerDeadline: AnswerDeadline(s.cfg.Answer).String(), AnswerDeadlineLocal: answerDeadlineLocal(s.cfg.Answer).String()}
	if !s.cfg.NoModels {
		st.ModelsDir = AbsPath(s.modelsDir())
	}
	if s.Retriever != nil {
		st.Search = s.Retriever.Modes()
	}
	st.RecentHalfLife, st.RecentWeight = recency(s.cfg.Retrieval)
	return st
}

// recency is the half-life and weight of the recency signal cfg gives
// (its defaults where cfg leaves them unset).
func recency(cfg retrieval.Config) (halfLife string, weight float64) {
	d := retrieval.DefaultConfig()
	h, w := cfg.RecencyHalfLife, cfg.RecencyWeight
	if h <= 0 {
		h = d.RecencyHalfLife
	}
	if w <= 0 {
		w = d.RecencyWeight
	}
	return h.String(), w
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
func RunningSettings(ctx context.Context, b *bus.Bus) (*schemas.SystemSettings, error) {
	var st schemas.SystemSettings
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
