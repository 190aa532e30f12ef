package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"
)

// AnswerJSON is the message's content under response_format json_object:
// the verified answer (without its sources list), its citations, and how
// it came to be.
type AnswerJSON struct {
	Answer     string     `json:"answer"`
	Citations  []Citation `json:"citations"`
	Mode       string     `json:"mode"`
	Confidence float64    `json:"confidence"`
}

// EstimateTokens is a tokenizer-free estimate of how many tokens a text
// is, for the usage of answers no provider counted: each word (a run of
// letters or digits) is one token per four characters in Latin script and
// one per three in any other (Cyrillic splits finer in the common
// tokenizers), at least one; every other non-space character is a token.
func EstimateTokens(s string) int {
	n, word, ascii := 0, 0, true
	end := func() {
		if word > 0 {
			per := 4
			if !ascii {
				per = 3
			}
			n += (word + per - 1) / per
		}
		word, ascii = 0, true
	}
	for _, r := range s {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			word++
			ascii = ascii && r < utf8.RuneSelf
		case unicode.IsSpace(r):
			end()
		default:
			end()
			n++
		}
	}
	end()
	return n
}

// estimateUsage estimates the usage of a reply: prompt from every message
// the client sent, completion from the content returned.
func estimateUsage(prompt []string, content string) *Usage {
	u := &Usage{Estimated: true}
	for _, p := range prompt {
		u.PromptTokens += EstimateTokens(p)
	}
	u.CompletionTokens = EstimateTokens(content)
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

// jsonProblem says what is wrong with a request body in JSON's terms,
// without the Go type names the decoder's errors carry.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return "the body is empty: send a JSON object"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON ends before it is complete"
	case errors.As(err, &se):
		return fmt.Sprintf("not valid JSON at byte %d (%s)", se.Offset, strings.TrimPrefix(se.Error(), "json: "))
	case errors.As(err, &te):
		if te.Field == "" {
			return fmt.Sprintf("want a JSON object, got %s", jsonValue(te.Value))
		}
		return fmt.Sprintf("field %q wants %s, got %s", te.Field, jsonKind(te.Type), jsonValue(te.Value))
	}
	return err.Error()
}

// jsonKind names what a Go type holds in JSON's words: an object, an
// array, a string, a number, true or false.
func jsonKind(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a value"
}

// jsonValue is the decoder's description of a value ("array", "string",
// "number 1.5") with its article.
func jsonValue(v string) string {
	switch {
	case v == "array", v == "object":
		return "an " + v
	case v == "":
		return "another value"
	}
	return "a " + v
}
