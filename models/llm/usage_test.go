package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// usageProvider is an OpenAI-compatible provider that reports the usage in
// its stream only when asked with stream_options.include_usage (as OpenAI
// and Ollama do), or that refuses stream_options outright (strict), and
// records what each request carried.
type usageProvider struct {
	strict bool
	status int // the refusal's status when strict

	mu   sync.Mutex
	sent []bool // whether each request carried stream_options.include_usage
}

func (p *usageProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		StreamOptions *struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	asked := body.StreamOptions != nil && body.StreamOptions.IncludeUsage
	p.mu.Lock()
	p.sent = append(p.sent, asked)
	p.mu.Unlock()
	if p.strict && body.StreamOptions != nil {
		w.WriteHeader(p.status)
		fmt.Fprint(w, `{"error":{"message":"Extra inputs are not permitted: stream_options"}}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"Crows use tools.\"}}]}\n\n")
	fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
	if asked {
		fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":41,\"completion_tokens\":5,\"total_tokens\":46}}\n\n")
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func (p *usageProvider) requests() []bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]bool(nil), p.sent...)
}

func TestTheClientAsksForTheStreamsUsageAndDoesWithoutWhereRefused(t *testing.T) {
	cases := []struct {
		name      string
		p         *usageProvider
		wantUsage bool
		// wantSent is stream_options per request over two chats.
		wantSent []bool
	}{
		{"a provider that reports usage when asked gives it on every chat",
			&usageProvider{}, true, []bool{true, true}},
		{"a provider that refuses stream_options with 400 is asked again without, and never again with",
			&usageProvider{strict: true, status: http.StatusBadRequest}, false, []bool{true, false, false}},
		{"a provider that refuses stream_options with 422 is asked again without, and never again with",
			&usageProvider{strict: true, status: http.StatusUnprocessableEntity}, false, []bool{true, false, false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.p)
			defer srv.Close()
			c := &Client{Name: "p", BaseURL: srv.URL, Timeout: 5 * time.Second}
			for i := range 2 {
				comp, err := c.Chat(context.Background(), ChatRequest{Model: "m", Messages: []Message{{Role: "user", Content: "Что едят вороны?"}}}, nil)
				if err != nil {
					t.Fatalf("chat %d: %v", i, err)
				}
				if comp.Text != "Crows use tools." {
					t.Errorf("chat %d: text %q", i, comp.Text)
				}
				if tc.wantUsage && (comp.Usage == nil || *comp.Usage != (Usage{PromptTokens: 41, CompletionTokens: 5, TotalTokens: 46})) {
					t.Errorf("chat %d: usage %+v, want the provider's 41+5", i, comp.Usage)
				}
				if !tc.wantUsage && comp.Usage != nil {
					t.Errorf("chat %d: usage %+v from a provider that sent none", i, comp.Usage)
				}
			}
			if got := tc.p.requests(); fmt.Sprint(got) != fmt.Sprint(tc.wantSent) {
				t.Errorf("stream_options.include_usage per request: %v, want %v", got, tc.wantSent)
			}
		})
	}
}
