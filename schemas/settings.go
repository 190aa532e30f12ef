package schemas

// SystemSettings are a running system's query settings, without secrets: a
// system running every stage (exocortex up) records them in KB_STATS (key
// system_settings), so that a client with settings of its own can say
// which are used.
type SystemSettings struct {
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
	// RecentHalfLife ("2160h0m0s") and RecentWeight shape the recency
	// signal of queries that prefer recent notes (empty and 0 from a
	// system that predates them).
	RecentHalfLife string  `json:"recent_half_life,omitempty"`
	RecentWeight   float64 `json:"recent_weight,omitempty"`
}
