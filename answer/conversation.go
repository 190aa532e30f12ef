package answer

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/schemas"
)

// Reformulate turns a follow-up question and its chat history into a
// standalone query (the strategic role), so retrieval searches for what the
// user means ("and where do they live?" -> "where do ravens live?"). Without
// history it returns the question; on a provider failure, the question too,
// with the error.
func Reformulate(ctx context.Context, r *llm.Router, question string, history []schemas.Turn) (string, error) {
	if r == nil || len(history) == 0 {
		return question, nil
	}
	var b strings.Builder
	for _, t := range history[max(0, len(history)-6):] {
		fmt.Fprintf(&b, "%s: %s\n", t.Role, t.Text)
	}
	msgs := []llm.Message{
		{Role: "system", Content: "Rewrite the user's last question as one standalone search query in the same language, " +
			"resolving pronouns and references from the conversation. Answer with the query only."},
		{Role: "user", Content: "Conversation:\n" + b.String() + "\nLast question: " + question},
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	res, err := r.Stream(ctx, llm.Request{Role: llm.RoleStrategic, Messages: msgs}, func(string) error { return nil })
	if err != nil {
		return question, err
	}
	q := strings.TrimSpace(strings.Trim(strings.TrimSpace(res.Text), `"«»`))
	if q == "" || len(q) > 4*len(question)+200 {
		return question, nil
	}
	return q, nil
}

// FollowUps asks for 3-5 questions the user may ask next (the strategic
// role), one per line. Best effort: a failure gives none.
func FollowUps(ctx context.Context, r *llm.Router, question, answer, lang string) []string {
	if r == nil {
		return nil
	}
	language := "the language of the question"
	if lang == "ru" {
		language = "Russian"
	} else if lang == "en" {
		language = "English"
	}
	msgs := []llm.Message{
		{Role: "system", Content: "Suggest 3 to 5 short follow-up questions the user may ask next about their notes, in " + language +
			". One question per line, no numbering, nothing else."},
		{Role: "user", Content: "Question: " + question + "\nAnswer: " + answer},
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	res, err := r.Stream(ctx, llm.Request{Role: llm.RoleStrategic, Messages: msgs}, func(string) error { return nil })
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(res.Text, "\n") {
		line = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "-*•0123456789.) "))
		if line != "" && len(out) < 5 {
			out = append(out, line)
		}
	}
	if len(out) < 3 {
		return nil
	}
	return out
}
