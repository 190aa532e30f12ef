package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/exocortex/exocortex/schemas"
)

// The wire format of OpenAI's chat completions API, the part of it a chat
// client sends and reads.

// chatRequest is the body of POST /v1/chat/completions. Fields a knowledge
// base has no use for (temperature, tools, n...) are accepted and ignored.
type chatRequest struct {
	Model          string          `json:"model"`
	Messages       []chatMessage   `json:"messages"`
	Stream         bool            `json:"stream,omitempty"`
	StreamOptions  *streamOptions  `json:"stream_options,omitempty"`
	ResponseFormat *responseFormat `json:"response_format,omitempty"`
	User           string          `json:"user,omitempty"`
}

// responseFormat is the request's response_format: "text" (the default)
// or "json_object" are answered; "json_schema" is refused (see
// FormatJSONObject).
type responseFormat struct {
	Type string `json:"type"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage,omitempty"`
}

// chatMessage is one message; its content is a string or a list of parts
// of which the text parts are read.
type chatMessage struct {
	Role    string      `json:"role"`
	Content messageText `json:"content"`
}

// messageText reads a message's content: a string, null, or an array of
// content parts ({"type":"text","text":"..."}; other parts are skipped).
type messageText string

func (m *messageText) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || bytes.Equal(b, []byte("null")):
		*m = ""
		return nil
	case b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*m = messageText(s)
		return nil
	case b[0] == '[':
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(b, &parts); err != nil {
			return fmt.Errorf("content parts: %w", err)
		}
		var texts []string
		for _, p := range parts {
			if p.Type == "text" && p.Text != "" {
				texts = append(texts, p.Text)
			}
		}
		*m = messageText(strings.Join(texts, "\n"))
		return nil
	}
	return fmt.Errorf("content: want a string or an array of content parts, got %.20s", b)
}

// completion is a chat.completion (stream false).
type completion struct {
	ID        string             `json:"id"`
	Object    string             `json:"object"` // "chat.completion"
	Created   int64              `json:"created"`
	Model     string             `json:"model"`
	Choices   []completionChoice `json:"choices"`
	Usage     *Usage             `json:"usage"`
	Citations []Citation         `json:"citations"`
	Exocortex *Info              `json:"exocortex,omitempty"`
}

// Usage is OpenAI's token accounting of a completion: the language-model
// tokens the answer spent as its provider reported them, or, when no
// provider reported any (a cached, extractive or search-only answer, the
// exocortex-search model, a provider that sends no usage), an estimate
// from the request's and the reply's text (EstimateTokens), and then
// Estimated is true. Clients of the OpenAI API ignore the extra field.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// Estimated says the counts are this endpoint's estimate, not a
	// provider's (omitted when they are the provider's).
	Estimated bool `json:"estimated,omitempty"`
}

type completionChoice struct {
	Index        int             `json:"index"`
	Message      responseMessage `json:"message"`
	FinishReason string          `json:"finish_reason"`
}

type responseMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// chunk is a chat.completion.chunk (stream true).
type chunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"` // "chat.completion.chunk"
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	// Citations and Exocortex ride on the finishing chunk only.
	Citations []Citation `json:"citations,omitempty"`
	Exocortex *Info      `json:"exocortex,omitempty"`
	// Usage is null on every chunk but the last when the request asked
	// for stream_options.include_usage (the last has no choices and the
	// usage), and absent otherwise, as OpenAI sends it.
	Usage json.RawMessage `json:"usage,omitempty"`
}

type chunkChoice struct {
	Index        int     `json:"index"`
	Delta        delta   `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

type delta struct {
	Role    string `json:"role,omitempty"`
	Content string `json:"content,omitempty"`
}

// Citation is one numbered source of an answer, as the "citations" field
// of the last chunk (or of the completion) carries it: Number is the [n]
// marker in the text and in the Sources list.
type Citation struct {
	Number      int      `json:"number"`
	BlockID     string   `json:"block_id"`
	DocID       string   `json:"doc_id,omitempty"`
	Title       string   `json:"title,omitempty"`
	SectionPath []string `json:"section_path,omitempty"`
	// Link opens the block (siyuan://blocks/<id>, or a file URL).
	Link string `json:"link,omitempty"`
	// Quote is the cited text as found in the block (answers); Snippet the
	// passage's matching words (exocortex-search).
	Quote   string `json:"quote,omitempty"`
	Snippet string `json:"snippet,omitempty"`
	// Updated is the cited note's own time (RFC 3339), when known.
	Updated string `json:"updated,omitempty"`
	// Recency is "newer" or "older" when this source and another disagree
	// (schemas.Citation.Recency).
	Recency string `json:"recency,omitempty"`
}

// Info is how the answer came to be, as the "exocortex" field carries it.
type Info struct {
	QueryID string `json:"query_id,omitempty"`
	// Mode is the answer's mode (llm, cache, extractive, search_only).
	Mode string `json:"mode"`
	// RetrievalMode is the search's mode (exocortex-search only).
	RetrievalMode      string   `json:"retrieval_mode,omitempty"`
	Reasons            []string `json:"reasons,omitempty"`
	Confidence         float64  `json:"confidence"`
	StandaloneQuestion string   `json:"standalone_question,omitempty"`
	FollowUps          []string `json:"follow_ups,omitempty"`
	Provider           string   `json:"provider,omitempty"`
	// Restarted is true when the streamed text was taken back after it was
	// sent (a provider broke off midway and the answer started again, or
	// tokens were lost; never in normal operation): the part after the last
	// separator is the verified answer.
	Restarted bool `json:"restarted,omitempty"`
}

// model is an entry of GET /v1/models.
type model struct {
	ID          string `json:"id"`
	Object      string `json:"object"` // "model"
	Created     int64  `json:"created"`
	OwnedBy     string `json:"owned_by"`
	Description string `json:"description,omitempty"`
}

type modelList struct {
	Object string  `json:"object"` // "list"
	Data   []model `json:"data"`
}

// apiError is OpenAI's error body.
type apiError struct {
	Error errorBody `json:"error"`
}

type errorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code,omitempty"`
}

// citationsOf numbers an answer's citations: their own markers when they
// have them, else their place in the list (search-only and extractive
// answers carry no markers).
func citationsOf(cs []schemas.Citation) []Citation {
	out := make([]Citation, 0, len(cs))
	for i, c := range cs {
		n := c.Number
		if n == 0 {
			n = i + 1
		}
		out = append(out, Citation{Number: n, BlockID: c.BlockID, DocID: c.DocID, Title: c.Title,
			SectionPath: c.SectionPath, Link: c.Link, Quote: c.Quote, Updated: c.Updated, Recency: c.Recency})
	}
	return out
}
