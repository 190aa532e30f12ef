package schemas

import "fmt"

// Answer event types.
const (
	TypeAnswerTokenV1 = "kb.answer.token.v1"
	TypeAnswerDoneV1  = "kb.answer.done.v1"
	// TypeAnswerFollowUpsV1 comes after kb.answer.done: follow-up
	// questions are generated once the answer is out, so they never delay it.
	TypeAnswerFollowUpsV1 = "kb.answer.followups.v1"
)

// SubjectAnswerTokensPrefix + query id is the core NATS subject (not a
// stream) of an answer's streamed tokens.
const SubjectAnswerTokensPrefix = "kb.answer.tokens."

// Answer modes, from the fullest to the last resort.
const (
	AnswerLLM        = "llm"         // a language model wrote it; citations verified
	AnswerCache      = "cache"       // a cached answer to a close question, its blocks unchanged
	AnswerExtractive = "extractive"  // a span of a note, found by the local QA model
	AnswerSearchOnly = "search_only" // the best passages with highlighted snippets
)

// AnswerToken is one piece of a streamed answer. Seq starts at 1 and has no
// gaps; the last message has Final set (and may carry no text).
type AnswerToken struct {
	Envelope
	QueryID string `json:"query_id"`
	Seq     int    `json:"seq"`
	Text    string `json:"text,omitempty"`
	Final   bool   `json:"final,omitempty"`
	// Restart tells the client to discard the tokens so far: a provider
	// broke off after verified sentences were sent, and the answer starts
	// again (from it or another). Never in normal operation: every token is
	// a verified sentence that the final answer keeps.
	Restart bool `json:"restart,omitempty"`
}

// Subject is kb.answer.tokens.<query_id>.
func (e *AnswerToken) Subject() string { return SubjectAnswerTokensPrefix + e.QueryID }

// MsgID is "token:<query_id>:<seq>".
func (e *AnswerToken) MsgID() string { return fmt.Sprintf("token:%s:%d", e.QueryID, e.Seq) }

// Citation ties a claim of an answer to the note block it came from.
type Citation struct {
	BlockID     string   `json:"block_id"`
	ChunkID     string   `json:"chunk_id,omitempty"`
	DocID       string   `json:"doc_id,omitempty"`
	Title       string   `json:"title,omitempty"`
	SectionPath []string `json:"section_path,omitempty"`
	// Quote is the cited text as found in the block.
	Quote string `json:"quote,omitempty"`
	// Link opens the block: siyuan://blocks/<id> for SiYuan notes, a file
	// URL otherwise.
	Link string `json:"link,omitempty"`
	// Number is the citation's marker in the answer text: [Number] (1-based,
	// citations[i].Number == i+1); 0 in search-only and extractive answers
	// that carry no markers.
	Number int `json:"number,omitempty"`
	// Spans are the claims of the answer this citation supports, as
	// character (Unicode code point) offsets into AnswerDone.Answer.
	Spans []TextSpan `json:"spans,omitempty"`
	// Updated is the cited note's own time (RFC 3339: its front matter's
	// date, else its source's update time), empty when unknown: answers
	// and reports show each source's date.
	Updated string `json:"updated,omitempty"`
	// Recency is "newer" or "older" when this source and another cited for
	// the same claim give different values for it and both notes are
	// dated (differently): the answer then also says which is newer.
	// Empty otherwise (answer.MarkNewer).
	Recency string `json:"recency,omitempty"`
}

// Citation recencies.
const (
	RecencyNewer = "newer"
	RecencyOlder = "older"
)

// TextSpan is Answer[Start:End] in characters (Unicode code points).
type TextSpan struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// Unsupported is a sentence of a language model's answer that no context
// supports: removed from the answer, or kept with a visible marker (then
// Span says where).
type Unsupported struct {
	Text   string    `json:"text"`
	Reason string    `json:"reason"`
	Span   *TextSpan `json:"span,omitempty"`
}

// AnswerDone is a finished answer.
type AnswerDone struct {
	Envelope
	QueryID    string     `json:"query_id"`
	Question   string     `json:"question"`
	Lang       string     `json:"lang,omitempty"`
	Mode       string     `json:"mode"`
	Answer     string     `json:"answer"`
	Citations  []Citation `json:"citations"`
	Confidence float64    `json:"confidence"`
	// Reasons explain a lower mode, an abstention (low_coverage,
	// low_agreement) or dropped citations.
	Reasons []string `json:"reasons,omitempty"`
	// Unsupported lists the model's sentences that the notes do not support.
	Unsupported []Unsupported `json:"unsupported,omitempty"`
	// StandaloneQuestion is the question as answered: rewritten from the
	// chat history when there was one.
	StandaloneQuestion string             `json:"standalone_question,omitempty"`
	FollowUps          []string           `json:"follow_ups,omitempty"`
	Provider           string             `json:"provider,omitempty"`
	TimingsMS          map[string]float64 `json:"timings_ms,omitempty"`
	// Usage is the language-model tokens the answer spent, as the
	// provider reported them (summed over the answering requests); absent
	// when no provider was asked or none reported its usage.
	Usage *Usage `json:"usage,omitempty"`
}

// Usage is a provider's token accounting, in OpenAI's terms.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Add adds u's tokens to the receiver's and returns it (a nil receiver
// starts from zero; a nil u adds nothing).
func (t *Usage) Add(u *Usage) *Usage {
	if u == nil {
		return t
	}
	if t == nil {
		t = &Usage{}
	}
	t.PromptTokens += u.PromptTokens
	t.CompletionTokens += u.CompletionTokens
	t.TotalTokens += u.TotalTokens
	return t
}

// MsgID is "answer:<query_id>".
func (e *AnswerDone) MsgID() string { return "answer:" + e.QueryID }

// Validate checks the fields clients rely on.
func (e *AnswerDone) Validate() error {
	if e.QueryID == "" {
		return fmt.Errorf("query_id is required")
	}
	switch e.Mode {
	case AnswerLLM, AnswerCache, AnswerExtractive, AnswerSearchOnly:
	default:
		return fmt.Errorf("mode %q: want llm, cache, extractive or search_only", e.Mode)
	}
	for i, c := range e.Citations {
		if c.BlockID == "" {
			return fmt.Errorf("citation %d has no block_id", i)
		}
	}
	return nil
}

// AnswerFollowUps carries the follow-up questions of an answer, published
// on kb.answer.followups after its kb.answer.done (none when the answer is
// not a language model's, or the provider gave none).
type AnswerFollowUps struct {
	Envelope
	QueryID   string             `json:"query_id"`
	Lang      string             `json:"lang,omitempty"`
	FollowUps []string           `json:"follow_ups"`
	TimingsMS map[string]float64 `json:"timings_ms,omitempty"`
}

// MsgID is "followups:<query_id>".
func (e *AnswerFollowUps) MsgID() string { return "followups:" + e.QueryID }

// Validate checks the fields clients rely on.
func (e *AnswerFollowUps) Validate() error {
	if e.QueryID == "" {
		return fmt.Errorf("query_id is required")
	}
	return nil
}
