package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/gateway"
	"github.com/exocortex/exocortex/gateway/gatewaytest"
	"github.com/exocortex/exocortex/gateway/openai"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/schemas"
)

var birds = map[string]string{
	"birds.md":  "# Birds\n\nRavens and crows use tools to get food.\n\n## Nests\n\nMagpies build domed nests of twigs and mud.\n",
	"plants.md": "# Plants\n\nFerns reproduce by spores, not seeds.\n",
}

const crowsAnswer = "Crows «use tools to get food» [1]."

// reformulations answers the strategic provider's reformulation requests
// with a standalone query, and its follow-up requests with questions.
func reformulations(query string) llmtest.Responder {
	return func(body llmtest.ChatBody) (string, *llmtest.Fault, bool) {
		if len(body.Messages) > 0 && strings.Contains(body.Messages[0].Content, "standalone search query") {
			return query, nil, true
		}
		return "What do ravens eat?\nWhere do crows nest?\nAre crows clever?\n", nil, true
	}
}

// startPipeline is gatewaytest.Start with the snippet marks these tests
// read: a search's matched words in [brackets].
func startPipeline(t testing.TB, notes map[string]string) (*gatewaytest.Backend, gatewaytest.Providers) {
	b, pv := gatewaytest.Start(t, notes)
	b.SearchMarks = gateway.CLIMarks
	return b, pv
}

func client(t *testing.T, b *gatewaytest.Backend) (oa.Client, *httptest.Server) {
	srv := httptest.NewServer(openai.Handler(b))
	t.Cleanup(srv.Close)
	return oa.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0)), srv
}

type extra struct {
	Citations []openai.Citation `json:"citations"`
	Exocortex *openai.Info      `json:"exocortex"`
}

func TestAChatClientGetsAStreamedCitedAnswerAndItsHistoryReachesReformulation(t *testing.T) {
	b, pv := startPipeline(t, birds)
	pv.Fast.SetAnswer(crowsAnswer)
	pv.Strategic.SetResponder(reformulations("what do crows use to get food"))
	c, _ := client(t, b)

	ctx := context.Background()
	stream := c.Chat.Completions.NewStreaming(ctx, oa.ChatCompletionNewParams{
		Model: openai.ModelAsk,
		Messages: []oa.ChatCompletionMessageParamUnion{
			oa.SystemMessage("You are a helpful assistant."),
			oa.UserMessage("Tell me about crows"),
			oa.AssistantMessage("Crows are birds" + openai.RestartSeparator + "Crows are clever birds [1].\n\nSources:\n[1] Birds — block x"),
			oa.UserMessage("And what do they use?"),
		},
	})
	var text strings.Builder
	var deltas []string
	finished := ""
	var last extra
	for stream.Next() {
		ch := stream.Current()
		if ch.Object != "chat.completion.chunk" || ch.Model != openai.ModelAsk || !strings.HasPrefix(ch.ID, "chatcmpl-") {
			t.Errorf("chunk header: object %q model %q id %q", ch.Object, ch.Model, ch.ID)
		}
		if len(ch.Choices) != 1 {
			t.Fatalf("chunk with %d choices: %s", len(ch.Choices), ch.RawJSON())
		}
		if d := ch.Choices[0].Delta.Content; d != "" {
			text.WriteString(d)
			deltas = append(deltas, d)
		}
		if ch.Choices[0].FinishReason != "" {
			finished = ch.Choices[0].FinishReason
			if err := json.Unmarshal([]byte(ch.RawJSON()), &last); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	got := text.String()
	if finished != "stop" {
		t.Errorf("finish_reason %q", finished)
	}
	// The verified sentence comes as one chunk, then the sources.
	if len(deltas) != 2 || deltas[0] != crowsAnswer || !strings.HasPrefix(deltas[1], "\n\nSources:\n") {
		t.Errorf("content chunks %q, want the verified sentence, then the sources", deltas)
	}
	if last.Exocortex == nil || last.Exocortex.Mode != "llm" || len(last.Citations) != 1 {
		t.Fatalf("structured fields of the last chunk: %+v", last)
	}
	cite := last.Citations[0]
	if cite.Number != 1 || cite.Quote != "use tools to get food" || cite.BlockID == "" {
		t.Errorf("citation %+v", cite)
	}
	// The cited block holds the quote.
	blk, err := b.Block(ctx, cite.BlockID)
	if err != nil || blk == nil || !strings.Contains(blk.Text, "use tools to get food") {
		t.Errorf("cited block %s: %+v (%v)", cite.BlockID, blk, err)
	}
	wantSources := "\n\nSources:\n[1] Birds — "
	if !strings.HasPrefix(got, crowsAnswer+wantSources) {
		t.Errorf("streamed text %q, want the answer then %q", got, wantSources)
	}
	if link := cite.Link; link == "" || !strings.HasSuffix(got, link+" ("+answer.SourceDate(cite.Updated)+")") {
		t.Errorf("the sources list does not end with the citation's link %q and its note's date: %q", link, got)
	}
	// The history went into reformulation, our own sources list left out.
	var reform string
	for _, r := range pv.Strategic.Requests() {
		if len(r.Body.Messages) == 2 && strings.Contains(r.Body.Messages[0].Content, "standalone search query") {
			reform = r.Body.Messages[1].Content
		}
	}
	for _, want := range []string{"user: Tell me about crows", "assistant: Crows are clever birds [1].", "Last question: And what do they use?"} {
		if !strings.Contains(reform, want) {
			t.Errorf("the reformulation request lacks %q: %q", want, reform)
		}
	}
	if strings.Contains(reform, "Sources:") || strings.Contains(reform, "helpful assistant") || strings.Contains(reform, "---") {
		t.Errorf("the reformulation request carries the sources list, a withdrawn text or the system prompt: %q", reform)
	}
	if last.Exocortex.StandaloneQuestion != "what do crows use to get food" {
		t.Errorf("standalone question %q", last.Exocortex.StandaloneQuestion)
	}
}

func TestANonStreamedCompletionCarriesTheAnswerSourcesAndCitations(t *testing.T) {
	b, pv := startPipeline(t, birds)
	pv.Fast.SetAnswer(crowsAnswer)
	c, _ := client(t, b)
	res, err := c.Chat.Completions.New(context.Background(), oa.ChatCompletionNewParams{
		Model:    openai.ModelAsk,
		Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("What do crows use?")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Object != "chat.completion" || len(res.Choices) != 1 || res.Choices[0].FinishReason != "stop" || res.Choices[0].Message.Role != "assistant" {
		t.Fatalf("completion %s", res.RawJSON())
	}
	content := res.Choices[0].Message.Content
	if !strings.HasPrefix(content, crowsAnswer+"\n\nSources:\n[1] Birds — ") {
		t.Errorf("content %q", content)
	}
	var ex extra
	if err := json.Unmarshal([]byte(res.RawJSON()), &ex); err != nil {
		t.Fatal(err)
	}
	if len(ex.Citations) != 1 || ex.Citations[0].Quote != "use tools to get food" || ex.Exocortex == nil || ex.Exocortex.Mode != "llm" ||
		ex.Exocortex.QueryID == "" {
		t.Errorf("structured fields %+v", ex)
	}
	if _, ok := res.JSON.ExtraFields["citations"]; !ok {
		t.Errorf("the client does not see a citations field: %s", res.RawJSON())
	}
}

func TestTheSearchModelListsCitedPassagesWithoutALanguageModel(t *testing.T) {
	b, pv := startPipeline(t, birds)
	c, _ := client(t, b)
	models, err := c.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range models.Data {
		ids = append(ids, m.ID)
	}
	if strings.Join(ids, ",") != "exocortex,exocortex-search" {
		t.Errorf("models %v", ids)
	}

	before := len(pv.Fast.Requests()) + len(pv.Strategic.Requests())
	res, err := c.Chat.Completions.New(context.Background(), oa.ChatCompletionNewParams{
		Model:    openai.ModelSearch,
		Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("magpies nests")},
	})
	if err != nil {
		t.Fatal(err)
	}
	content := res.Choices[0].Message.Content
	var ex extra
	if err := json.Unmarshal([]byte(res.RawJSON()), &ex); err != nil {
		t.Fatal(err)
	}
	if len(ex.Citations) == 0 || ex.Exocortex.Mode != "search_only" || ex.Exocortex.RetrievalMode == "" {
		t.Fatalf("structured fields %+v", ex)
	}
	first := ex.Citations[0]
	if !strings.Contains(first.Snippet, "nests") || !strings.Contains(content, "1. **Birds**: ") ||
		!strings.Contains(content, "\n\nSources:\n[1] Birds — "+first.Link) {
		t.Errorf("first passage %+v in %q", first, content)
	}
	if after := len(pv.Fast.Requests()) + len(pv.Strategic.Requests()); after != before {
		t.Errorf("a search-only answer asked the language model (%d requests)", after-before)
	}
}

func TestBadRequestsGetOpenAIErrors(t *testing.T) {
	b, _ := startPipeline(t, birds)
	c, srv := client(t, b)
	_, err := c.Chat.Completions.New(context.Background(), oa.ChatCompletionNewParams{
		Model: "gpt-4o", Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("hi")}})
	var apiErr *oa.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || apiErr.Code != "model_not_found" ||
		!strings.Contains(apiErr.Message, "exocortex-search") {
		t.Errorf("unknown model: %v", err)
	}
	for _, tc := range []struct {
		body   string
		status int
		msg    string
	}{
		{`{"model":"exocortex","messages":[`, 400, "not a chat completion request"},
		{`{"model":"exocortex","messages":[{"role":"system","content":"be brief"}]}`, 400, "user message"},
		{`{"model":"exocortex","messages":[{"role":"user","content":"` + strings.Repeat("a", openai.MaxBody) + `"}]}`, 413, "larger than"},
	} {
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct {
			Error struct{ Message, Type string } `json:"error"`
		}
		if resp.StatusCode != tc.status || json.Unmarshal(raw, &e) != nil || e.Error.Type != "invalid_request_error" ||
			!strings.Contains(e.Error.Message, tc.msg) {
			t.Errorf("%.60s: %d %s", tc.body, resp.StatusCode, raw)
		}
	}
}

// streamText streams a chat completion and returns its text and the last
// chunk's structured fields.
func streamText(t *testing.T, ctx context.Context, c oa.Client, question string) (string, extra, error) {
	t.Helper()
	stream := c.Chat.Completions.NewStreaming(ctx, oa.ChatCompletionNewParams{
		Model: openai.ModelAsk, Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage(question)}})
	defer stream.Close()
	var text strings.Builder
	var last extra
	for stream.Next() {
		ch := stream.Current()
		if len(ch.Choices) == 0 {
			continue
		}
		text.WriteString(ch.Choices[0].Delta.Content)
		if ch.Choices[0].FinishReason != "" {
			if err := json.Unmarshal([]byte(ch.RawJSON()), &last); err != nil {
				t.Fatal(err)
			}
		}
	}
	return text.String(), last, stream.Err()
}

// crows has two sentences in one block, so that an answer can quote both.
var crows = map[string]string{"crows.md": "# Crows\n\nCrows use tools to get food. Crows remember human faces for years.\n"}

const crowsTwoSentences = "Crows «use tools to get food» [1]. They «remember human faces for years» [1]."

// TestAProviderThatBreaksOffRestartsTheStreamOnlyAfterAVerifiedSentence:
// the stream shows sentences once they are verified, so a provider that
// breaks off before its first sentence is complete leaves nothing to take
// back; one that breaks off after a verified sentence was shown (abnormal:
// the router retries and the answer starts again) is followed by the
// separator and the whole answer.
func TestAProviderThatBreaksOffRestartsTheStreamOnlyAfterAVerifiedSentence(t *testing.T) {
	for _, tc := range []struct {
		name string
		// cut is the token after which the first attempt breaks off.
		cut int
		// shown is what streamed before the separator ("" for none).
		shown string
	}{
		{"a break within the first sentence shows nothing to withdraw", 3, ""},
		// Token 8 ("They ") starts the second sentence: the first is verified and shown.
		{"a break after a shown sentence is followed by the separator and the answer", 8, "Crows «use tools to get food» [1]."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, pv := startPipeline(t, crows)
			pv.Fast.SetAnswer(crowsTwoSentences)
			pv.Fast.Script(llmtest.CutAfter(tc.cut))
			c, _ := client(t, b)
			got, last, err := streamText(t, context.Background(), c, "What do crows use and remember?")
			if err != nil {
				t.Fatal(err)
			}
			if last.Exocortex == nil || last.Exocortex.Mode != "llm" || last.Exocortex.Restarted != (tc.shown != "") {
				t.Fatalf("structured fields %+v of %q", last.Exocortex, got)
			}
			want := crowsTwoSentences + "\n\nSources:\n[1] "
			if tc.shown != "" {
				want = tc.shown + openai.RestartSeparator + want
			}
			if !strings.HasPrefix(got, want) {
				t.Errorf("streamed %q, want it to begin %q", got, want)
			}
			if n := len(pv.Fast.Requests()); n < 2 {
				t.Errorf("%d requests to the provider: the broken answer was not asked again", n)
			}
		})
	}
}

// cancelWatch records how the backend's Ask ended.
type cancelWatch struct {
	*gatewaytest.Backend
	ended chan error
}

func (c *cancelWatch) Ask(ctx context.Context, q *schemas.QuerySubmitted, onToken func(*schemas.AnswerToken)) (*schemas.AnswerDone, error) {
	done, err := c.Backend.Ask(ctx, q, onToken)
	c.ended <- err
	return done, err
}

func TestAChatClientThatGoesAwayAbandonsItsQuery(t *testing.T) {
	b, pv := startPipeline(t, birds)
	// A verified sentence, then a sentence that goes on and on: no loop
	// to stop, so the answer would go on until its deadline.
	pv.Fast.SetAnswer(crowsAnswer + " They also" + strings.Repeat(" and also", 2000) + ".")
	pv.Fast.SetTokenDelay(5 * time.Millisecond)
	w := &cancelWatch{Backend: b, ended: make(chan error, 1)}
	srv := httptest.NewServer(openai.Handler(w))
	defer srv.Close()
	c := oa.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	ctx, cancel := context.WithCancel(context.Background())
	stream := c.Chat.Completions.NewStreaming(ctx, oa.ChatCompletionNewParams{
		Model: openai.ModelAsk, Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("What do crows use?")}})
	for stream.Next() {
		if len(stream.Current().Choices) > 0 && stream.Current().Choices[0].Delta.Content != "" {
			break // the answer is streaming: go away
		}
	}
	cancel()
	stream.Close()
	select {
	case err := <-w.ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the query ended with %v, want it abandoned (context canceled)", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the query went on 10s after its client went away")
	}
}

func TestAnAnswerThatDoesNotComeInTimeIsAnOpenAIErrorStreamedOrNot(t *testing.T) {
	b, pv := startPipeline(t, birds)
	pv.Fast.SetAnswer(crowsAnswer)
	pv.Fast.Always(llmtest.Delay(3 * time.Second))
	b.AskTimeout = 500 * time.Millisecond
	c, _ := client(t, b)
	_, _, err := streamText(t, context.Background(), c, "What do crows use?")
	if err == nil || !strings.Contains(err.Error(), "did not answer in time") {
		t.Errorf("streamed: %v", err)
	}
	_, err = c.Chat.Completions.New(context.Background(), oa.ChatCompletionNewParams{
		Model: openai.ModelAsk, Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("What do crows use?")}})
	var apiErr *oa.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusGatewayTimeout || apiErr.Code != "timeout" {
		t.Errorf("not streamed: %v", err)
	}
}

func TestTheStreamIsOpenAIsWireFormat(t *testing.T) {
	b, _ := startPipeline(t, birds)
	_, srv := client(t, b)
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"exocortex-search","stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"ferns spores"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("%d %s", resp.StatusCode, ct)
	}
	events := strings.Split(strings.TrimSuffix(string(raw), "\n\n"), "\n\n")
	if len(events) < 4 || events[len(events)-1] != "data: [DONE]" {
		t.Fatalf("want a role chunk, content, a last chunk and [DONE]: %q", raw)
	}
	var role struct {
		Choices []struct {
			Delta        map[string]string `json:"delta"`
			FinishReason *string           `json:"finish_reason"`
		} `json:"choices"`
	}
	for i, ev := range events[:len(events)-1] {
		data, ok := strings.CutPrefix(ev, "data: ")
		if !ok || strings.Contains(data, "\n") {
			t.Fatalf("event %d is not one data line: %q", i, ev)
		}
		if err := json.Unmarshal([]byte(data), &role); err != nil || len(role.Choices) != 1 {
			t.Fatalf("event %d: %v %q", i, err, data)
		}
		fin := role.Choices[0].FinishReason
		switch {
		case i == 0 && (role.Choices[0].Delta["role"] != "assistant" || fin != nil):
			t.Errorf("first chunk %q", data)
		case i == len(events)-2 && (fin == nil || *fin != "stop" || !strings.Contains(data, `"citations":[{"number":1,`)):
			t.Errorf("last chunk %q", data)
		case i > 0 && i < len(events)-2 && (fin != nil || role.Choices[0].Delta["content"] == ""):
			t.Errorf("content chunk %q", data)
		}
	}
	if !strings.Contains(string(raw), "[spores]") {
		t.Errorf("the passage is not in the stream: %q", raw)
	}
}
