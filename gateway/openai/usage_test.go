package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/exocortex/exocortex/gateway/openai"
)

func TestTheTokenEstimateCountsWordsByScript(t *testing.T) {
	cases := []struct {
		name string
		text string
		want int
	}{
		{"an empty text is no tokens", "", 0},
		{"a short English word is one token", "crows", 2},
		{"English words are a token per four letters, at least one", "Crows use tools", 2 + 1 + 2},
		{"a Russian word is a token per three letters", "вороны", 2},
		{"Russian words and punctuation each count", "Вороны едят орехи.", 2 + 2 + 2 + 1},
		{"a citation marker is its brackets and its digit", "[1]", 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := openai.EstimateTokens(tc.text); got != tc.want {
				t.Errorf("EstimateTokens(%q) = %d, want %d", tc.text, got, tc.want)
			}
		})
	}
}

var birdsRU = map[string]string{
	"birds.md":  birds["birds.md"],
	"plants.md": birds["plants.md"],
	"вороны.md": "# Вороны\n\nВороны используют орудия, чтобы добыть еду.\n",
}

// usageOf reads the usage of a raw completion, with the estimated mark.
func usageOf(t *testing.T, raw string) openai.Usage {
	t.Helper()
	var c struct {
		Usage *openai.Usage `json:"usage"`
	}
	if err := json.Unmarshal([]byte(raw), &c); err != nil || c.Usage == nil {
		t.Fatalf("no usage in %s (%v)", raw, err)
	}
	return *c.Usage
}

func TestEveryCompletionCarriesItsUsageFromTheProviderOrEstimatedAndSaidSo(t *testing.T) {
	b, pv := startPipeline(t, birdsRU)
	pv.Fast.SetAnswer(crowsAnswer)
	c, _ := client(t, b)
	cases := []struct {
		name, model, question string
		// provider: the counts are the scripted provider's (3 prompt tokens a
		// request), not estimated.
		provider bool
	}{
		{"an answer of the language model carries the provider's usage", openai.ModelAsk, "What do crows use to get food?", true},
		{"an English search carries an estimate, marked estimated", openai.ModelSearch, "magpies nests", false},
		{"a Russian search carries an estimate, marked estimated", openai.ModelSearch, "вороны орудия", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := c.Chat.Completions.New(context.Background(), oa.ChatCompletionNewParams{
				Model: tc.model, Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage(tc.question)}})
			if err != nil {
				t.Fatal(err)
			}
			u := usageOf(t, res.RawJSON())
			if res.Usage.TotalTokens != int64(u.TotalTokens) || u.TotalTokens != u.PromptTokens+u.CompletionTokens || u.CompletionTokens == 0 {
				t.Errorf("usage %+v (the client read %+v)", u, res.Usage)
			}
			content := res.Choices[0].Message.Content
			if tc.provider {
				if u.Estimated || u.PromptTokens == 0 || u.PromptTokens%3 != 0 {
					t.Errorf("usage %+v: want the provider's (3 prompt tokens a request), not estimated", u)
				}
				return
			}
			want := openai.Usage{PromptTokens: openai.EstimateTokens(tc.question), CompletionTokens: openai.EstimateTokens(content), Estimated: true}
			want.TotalTokens = want.PromptTokens + want.CompletionTokens
			if u != want {
				t.Errorf("usage %+v, want the estimate %+v", u, want)
			}
		})
	}
}

func TestAStreamAskedToIncludeUsageEndsWithAUsageChunkAsOpenAIsDoes(t *testing.T) {
	b, pv := startPipeline(t, birds)
	pv.Fast.SetAnswer(crowsAnswer)
	c, srv := client(t, b)

	// The official Go client reads the usage chunk.
	stream := c.Chat.Completions.NewStreaming(context.Background(), oa.ChatCompletionNewParams{
		Model: openai.ModelAsk, Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("What do crows use to get food?")},
		StreamOptions: oa.ChatCompletionStreamOptionsParam{IncludeUsage: oa.Bool(true)}})
	var acc oa.ChatCompletionAccumulator
	var last oa.ChatCompletionChunk
	for stream.Next() {
		last = stream.Current()
		acc.AddChunk(last)
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(last.Choices) != 0 || last.Usage.TotalTokens == 0 || last.Usage.PromptTokens%3 != 0 {
		t.Errorf("last chunk %s: want no choices and the provider's usage", last.RawJSON())
	}
	if acc.Usage.TotalTokens != last.Usage.TotalTokens || !strings.HasPrefix(acc.Choices[0].Message.Content, crowsAnswer) {
		t.Errorf("accumulated %+v", acc.ChatCompletion)
	}

	// On the wire: usage null on every chunk but the last, which has no
	// choices; without include_usage no chunk has a usage field.
	for _, include := range []bool{true, false} {
		body := `{"model":"exocortex-search","stream":true,"messages":[{"role":"user","content":"папоротники споры"}]`
		if include {
			body += `,"stream_options":{"include_usage":true}`
		}
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body+"}"))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		events := strings.Split(strings.TrimSuffix(string(raw), "\n\n"), "\n\n")
		if events[len(events)-1] != "data: [DONE]" {
			t.Fatalf("stream %q", raw)
		}
		chunks := events[:len(events)-1]
		for i, ev := range chunks {
			var ch struct {
				Choices []json.RawMessage `json:"choices"`
				Usage   json.RawMessage   `json:"usage"`
			}
			data := strings.TrimPrefix(ev, "data: ")
			if err := json.Unmarshal([]byte(data), &ch); err != nil {
				t.Fatalf("chunk %d: %v", i, err)
			}
			lastChunk := i == len(chunks)-1
			switch {
			case !include && strings.Contains(data, `"usage"`):
				t.Errorf("without include_usage, chunk %d has a usage: %s", i, data)
			case include && !lastChunk && (string(ch.Usage) != "null" || len(ch.Choices) != 1):
				t.Errorf("chunk %d before the last: want usage null and one choice: %s", i, data)
			case include && lastChunk && (ch.Choices == nil || len(ch.Choices) != 0 || !strings.Contains(string(ch.Usage), `"estimated":true`)):
				t.Errorf("last chunk: want choices [] and the estimated usage: %s", data)
			}
		}
	}
}

func TestResponseFormatJSONObjectIsTheAnswerAsJSONAndJSONSchemaIsRefused(t *testing.T) {
	b, pv := startPipeline(t, birds)
	pv.Fast.SetAnswer(crowsAnswer)
	c, _ := client(t, b)
	jsonObject := oa.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
	params := oa.ChatCompletionNewParams{Model: openai.ModelAsk, ResponseFormat: jsonObject,
		Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("What do crows use to get food?")}}

	check := func(how, content string) {
		var a openai.AnswerJSON
		dec := json.NewDecoder(strings.NewReader(content))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&a); err != nil {
			t.Fatalf("%s: the content is not the answer as JSON: %v: %q", how, err, content)
		}
		if a.Answer != crowsAnswer || a.Mode != "llm" || len(a.Citations) != 1 || a.Citations[0].Quote != "use tools to get food" {
			t.Errorf("%s: %+v", how, a)
		}
	}
	res, err := c.Chat.Completions.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	check("not streamed", res.Choices[0].Message.Content)

	stream := c.Chat.Completions.NewStreaming(context.Background(), params)
	var deltas []string
	for stream.Next() {
		if ch := stream.Current(); len(ch.Choices) > 0 && ch.Choices[0].Delta.Content != "" {
			deltas = append(deltas, ch.Choices[0].Delta.Content)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(deltas) != 1 {
		t.Errorf("streamed JSON in %d deltas, want one whole object: %q", len(deltas), deltas)
	}
	check("streamed", strings.Join(deltas, ""))

	refused := []struct {
		name   string
		format oa.ChatCompletionNewParamsResponseFormatUnion
		says   string
	}{
		{"json_schema is refused, naming what to send instead", oa.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "answer", Schema: map[string]any{"type": "object"}}}}, `json_object`},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			p := params
			p.ResponseFormat = tc.format
			_, err := c.Chat.Completions.New(context.Background(), p)
			var apiErr *oa.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Type != "invalid_request_error" ||
				apiErr.Param != "response_format" || !strings.Contains(apiErr.Message, tc.says) {
				t.Errorf("error %v", err)
			}
		})
	}
}

func TestMalformedRequestBodiesAreExplainedWithoutGoTypeNames(t *testing.T) {
	b, _ := startPipeline(t, birds)
	_, srv := client(t, b)
	cases := []struct {
		name, body, says string
	}{
		{"an array instead of an object", `[]`, "want a JSON object, got an array"},
		{"messages as a string", `{"messages":"hi"}`, `field "messages" wants an array, got a string`},
		{"stream as a string", `{"stream":"yes","messages":[]}`, `field "stream" wants true or false, got a string`},
		{"an unknown response format", `{"response_format":{"type":"yaml"},"messages":[{"role":"user","content":"вороны"}]}`, `"text" or "json_object"`},
		{"broken JSON", `{"messages":`, "ends before it is complete"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var e struct {
				Error struct{ Message, Type string } `json:"error"`
			}
			_ = json.Unmarshal(raw, &e)
			if resp.StatusCode != http.StatusBadRequest || e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, tc.says) {
				t.Errorf("%d %s: want 400 saying %q", resp.StatusCode, raw, tc.says)
			}
			for _, goName := range []string{"Go value", "openai.", "chatRequest", "[]openai", "main."} {
				if strings.Contains(e.Error.Message, goName) {
					t.Errorf("the message names a Go type (%q): %s", goName, e.Error.Message)
				}
			}
		})
	}
}
