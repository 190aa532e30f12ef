package llm

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/models/llm/llmtest"
)

func newTestClient(srv *llmtest.Server) *Client {
	return &Client{Name: "fake", BaseURL: srv.URL(), APIKey: "sk-secret-123", KeyEnv: "FAKE_KEY", Timeout: 2 * time.Second}
}

func TestClientStreamsTokensInOrder(t *testing.T) {
	srv := llmtest.New(t)
	srv.SetAnswer("one two three four")
	var got []string
	temp := 0.2
	comp, err := newTestClient(srv).Chat(context.Background(),
		ChatRequest{Model: "m", Messages: []Message{{Role: "user", Content: "hi"}}, Temperature: &temp, MaxTokens: 9},
		func(tok string) error { got = append(got, tok); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "|") != "one |two |three |four" || comp.Text != "one two three four" || comp.FinishReason != "stop" || comp.Usage == nil || comp.Usage.TotalTokens != 8 {
		t.Fatalf("tokens %q, comp %+v", got, comp)
	}
	req := srv.Requests()[0]
	if req.Header.Get("Authorization") != "Bearer sk-secret-123" || !req.Body.Stream || req.Body.Model != "m" || *req.Body.Temperature != 0.2 || req.Body.MaxTokens != 9 {
		t.Fatalf("request %+v", req)
	}
}

func TestClientReadsNonStreamingJSON(t *testing.T) {
	srv := llmtest.New(t)
	srv.SetJSON(true)
	srv.SetAnswer("whole answer")
	var got []string
	comp, err := newTestClient(srv).Chat(context.Background(), ChatRequest{Model: "m"}, func(s string) error { got = append(got, s); return nil })
	if err != nil || comp.Text != "whole answer" || comp.FinishReason != "stop" || len(got) != 1 {
		t.Fatalf("comp %+v, err %v, tokens %q", comp, err, got)
	}
}

func TestClientClassifiesFaults(t *testing.T) {
	tests := []struct {
		name       string
		fault      llmtest.Fault
		status     int
		retryable  bool
		retryAfter time.Duration
		msg        string
	}{
		{"a 500 is retryable", llmtest.Fail(500), 500, true, 0, "server error"},
		{"a 429 is retryable and carries Retry-After", llmtest.TooMany("7"), 429, true, 7 * time.Second, "rate limited"},
		{"a 429 with an HTTP date", llmtest.TooMany(time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)), 429, true, 28 * time.Second, "rate limited"},
		{"a 401 names the key variable", llmtest.Unauthorized(), 401, false, 0, "check the API key in $FAKE_KEY"},
		{"a 400 is not retryable", llmtest.Fail(400), 400, false, 0, "rejected"},
		{"a slow server times out", llmtest.Delay(2 * time.Second), 0, true, 0, "timeout"},
		{"a cut stream is retryable", llmtest.CutAfter(2), 0, true, 0, "stream cut after 2 tokens"},
		{"invalid JSON names the provider", llmtest.BadJSONAfter(1), 0, true, 0, "invalid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.SetAnswer("a b c d e")
			srv.Script(tt.fault)
			c := newTestClient(srv)
			c.Timeout = 200 * time.Millisecond
			_, err := c.Chat(context.Background(), ChatRequest{Model: "m"}, nil)
			var pe *ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("err %v is not a ProviderError", err)
			}
			if pe.Status != tt.status || pe.Retryable != tt.retryable || pe.Provider != "fake" || !strings.Contains(err.Error(), tt.msg) || !strings.Contains(err.Error(), "fake") {
				t.Fatalf("err %+v (%v)", pe, err)
			}
			if tt.retryAfter > 0 && (pe.RetryAfter < tt.retryAfter || pe.RetryAfter > tt.retryAfter+3*time.Second) {
				t.Fatalf("RetryAfter %s, want about %s", pe.RetryAfter, tt.retryAfter)
			}
			if strings.Contains(err.Error(), "sk-secret-123") {
				t.Fatal("key leaked into error")
			}
		})
	}
}

func TestClientStopsOnContextCancel(t *testing.T) {
	srv := llmtest.New(t)
	srv.SetAnswer("a b c d")
	ctx, cancel := context.WithCancel(context.Background())
	_, err := newTestClient(srv).Chat(ctx, ChatRequest{Model: "m"}, func(string) error { cancel(); return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}
