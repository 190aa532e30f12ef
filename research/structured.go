package research

import (
	"context"
	"errors"
	"strings"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/models/llm"
)

// DefaultReplyRetries is how many more times a structured reply that
// cannot be read (after repair) is asked for, with the parse error.
const DefaultReplyRetries = 2

// RetryPrompt is the user message that asks again for a reply that could
// not be read.
func RetryPrompt(err error) string {
	return "Your reply was not valid JSON: " + oneLine(err.Error()) + ". Reply with the JSON object only."
}

// maxEcho bounds the unusable reply sent back with the retry.
const maxEcho = 4000

// Ask is one structured request to a language model: its messages, how
// to make the call and how to read the reply.
type Ask struct {
	// What names the reply in errors and logs ("plan", "fact step").
	What     string
	Messages []llm.Message
	// Call makes one provider call with the messages given.
	Call func(ctx context.Context, msgs []llm.Message) (llm.Result, error)
	// Parse reads a reply; its error is what the retry tells the model.
	Parse func(text string) error
	// Retries is how many more calls an unreadable reply gets
	// (DefaultReplyRetries when 0; negative: none).
	Retries int
	// Allow, when set, is asked before every retry with the calls made so
	// far: false ends the retries (a call budget is spent).
	Allow func(calls int) bool
}

// AskStructured makes the call and reads its reply; a reply Parse cannot
// read is asked for again (at most Retries more times, each a call) with
// the unusable reply and a user message that names the parse error
// (RetryPrompt). It returns the last result, the calls made, and nil, the
// provider's error (as it is), or a *ReplyError when no reply could be read.
func AskStructured(ctx context.Context, a Ask) (llm.Result, int, error) {
	retries := a.Retries
	if retries == 0 {
		retries = DefaultReplyRetries
	}
	retries = max(retries, 0)
	msgs := a.Messages
	calls := 0
	var last llm.Result
	for {
		res, err := a.Call(ctx, msgs)
		calls++
		if err != nil {
			return res, calls, err
		}
		last = res
		perr := a.Parse(res.Text)
		if perr == nil {
			return res, calls, nil
		}
		zerolog.Ctx(ctx).Warn().Str("reply", a.What).Int("attempt", calls).Str("parse_error", perr.Error()).
			Str("reply_head", head(res.Text, 120)).Msg("structured reply unreadable")
		if calls > retries || (a.Allow != nil && !a.Allow(calls)) || ctx.Err() != nil {
			return last, calls, &ReplyError{What: a.What, Attempts: calls, Err: perr, Reply: res.Text}
		}
		echo := res.Text
		if len(echo) > maxEcho {
			echo = strings.ToValidUTF8(echo[:maxEcho], "")
		}
		msgs = append(append([]llm.Message(nil), a.Messages...),
			llm.Message{Role: "assistant", Content: echo}, llm.Message{Role: "user", Content: RetryPrompt(perr)})
	}
}

// IsReplyError tells whether err is a reply that could not be read.
func IsReplyError(err error) bool {
	var re *ReplyError
	return errors.As(err, &re)
}
