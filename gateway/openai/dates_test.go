package openai_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	oa "github.com/openai/openai-go/v3"

	"github.com/exocortex/exocortex/gateway/openai"
)

func TestTheCitationListDatesEachSource(t *testing.T) {
	b, pv := startPipeline(t, map[string]string{
		"birds.md":  "---\ndate: 2026-03-02\n---\n# Birds\n\nRavens and crows use tools to get food.\n",
		"вороны.md": "---\ndate: 2025-12-01\n---\n# Вороны\n\nВороны строят гнёзда из веток.\n",
	})
	pv.Fast.SetAnswer(crowsAnswer)
	c, _ := client(t, b)
	for _, tt := range []struct{ name, model, question, date string }{
		{"an English answer", openai.ModelAsk, "What do crows use?", "2026-03-02"},
		{"a Russian search", openai.ModelSearch, "гнёзда из веток", "2025-12-01"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := c.Chat.Completions.New(context.Background(), oa.ChatCompletionNewParams{Model: tt.model,
				Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage(tt.question)}})
			if err != nil {
				t.Fatal(err)
			}
			var ex extra
			if err := json.Unmarshal([]byte(res.RawJSON()), &ex); err != nil {
				t.Fatal(err)
			}
			content := res.Choices[0].Message.Content
			if len(ex.Citations) == 0 || !strings.HasPrefix(ex.Citations[0].Updated, tt.date) {
				t.Fatalf("citations %+v, want the first dated %s", ex.Citations, tt.date)
			}
			_, sources, _ := strings.Cut(content, "[1] ")
			line, _, _ := strings.Cut(sources, "\n")
			if !strings.HasSuffix(line, " ("+tt.date+")") {
				t.Errorf("source line %q does not end with its date %s", line, tt.date)
			}
		})
	}
}

func TestTwoSourcesThatDisagreeHaveTheNewerMarkedInTheAnswerAndItsSources(t *testing.T) {
	b, pv := startPipeline(t, map[string]string{
		"atlas-march.md": "---\ndate: 2024-03-12\n---\n# Atlas in March\n\nThe Atlas project budget is 5000 EUR.\n",
		"atlas-april.md": "---\ndate: 2024-04-02\n---\n# Atlas in April\n\nThe Atlas project budget is 7000 EUR.\n",
	})
	pv.Fast.SetAnswer("The notes say «The Atlas project budget is 5000 EUR.» [1]. Another says «The Atlas project budget is 7000 EUR.» [2].")
	c, _ := client(t, b)
	res, err := c.Chat.Completions.New(context.Background(), oa.ChatCompletionNewParams{Model: openai.ModelAsk,
		Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("What is the Atlas project budget?")}})
	if err != nil {
		t.Fatal(err)
	}
	var ex extra
	if err := json.Unmarshal([]byte(res.RawJSON()), &ex); err != nil {
		t.Fatal(err)
	}
	content := res.Choices[0].Message.Content
	marks := map[string]string{}
	for _, c := range ex.Citations {
		marks[c.Updated[:10]] = c.Recency
	}
	if marks["2024-04-02"] != "newer" || marks["2024-03-12"] != "older" {
		t.Fatalf("recencies by date %v, want 2024-04-02 newer and 2024-03-12 older: %s", marks, content)
	}
	if !strings.Contains(content, "disagree; [") || !strings.Contains(content, "(2024-04-02, newer)") || !strings.Contains(content, "(2024-03-12, older)") {
		t.Errorf("the answer does not say which source is newer:\n%s", content)
	}
}
