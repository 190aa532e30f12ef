package answer

import (
	"encoding/json"
	"strconv"
	"strings"
)

// jsonAnswer is the structured answer format: the answer text (with [n]
// markers naming citations[n-1], or none), the citations with the block id
// and the block's words they rest on, and the model's own confidence.
type jsonAnswer struct {
	Answer     string         `json:"answer"`
	Citations  []jsonCitation `json:"citations"`
	Confidence *float64       `json:"confidence"`
}

type jsonCitation struct {
	BlockID string `json:"block_id"`
	Quote   string `json:"quote"`
}

// UnmarshalJSON takes a block_id written as a number (a context's number).
func (c *jsonCitation) UnmarshalJSON(b []byte) error {
	var raw struct {
		BlockID any    `json:"block_id"`
		Quote   string `json:"quote"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	c.Quote = raw.Quote
	switch id := raw.BlockID.(type) {
	case string:
		c.BlockID = id
	case float64:
		c.BlockID = strconv.Itoa(int(id))
	}
	return nil
}

// jsonBody returns the JSON object a reply consists of: the whole reply, or
// the inside of ```json fences; ok is false for prose.
func jsonBody(text string) (string, bool) {
	s := strings.TrimSpace(text)
	if strings.HasPrefix(s, "```") {
		nl := strings.IndexByte(s, '\n')
		if nl < 0 {
			return "", false
		}
		s = strings.TrimSpace(s[nl+1:])
		s = strings.TrimSpace(strings.TrimSuffix(s, "```"))
	}
	return s, strings.HasPrefix(s, "{")
}

// parseJSON parses a JSON reply; a reply cut short (a stream stopped at its
// budget) gives the answer text decoded so far and no citations. ok is false
// for prose, or for a JSON object that has no "answer".
func parseJSON(text string) (jsonAnswer, bool) {
	body, ok := jsonBody(text)
	if !ok {
		return jsonAnswer{}, false
	}
	var probe map[string]json.RawMessage
	var j jsonAnswer
	dec := json.NewDecoder(strings.NewReader(body))
	if err := dec.Decode(&probe); err == nil {
		if _, has := probe["answer"]; !has {
			return jsonAnswer{}, false
		}
		if err := json.Unmarshal([]byte(body[:dec.InputOffset()]), &j); err == nil {
			return j, true
		}
	}
	partial, found := partialAnswer(body)
	if !found {
		return jsonAnswer{}, false
	}
	return jsonAnswer{Answer: partial}, true
}

// partialAnswer decodes the "answer" string of a JSON object that may be
// incomplete, as far as it goes; found is false until its opening quote.
func partialAnswer(body string) (string, bool) {
	i := 0
	for {
		k := strings.Index(body[i:], `"answer"`)
		if k < 0 {
			return "", false
		}
		j := skipJSONSpace(body, i+k+len(`"answer"`))
		if j < len(body) && body[j] == ':' {
			j = skipJSONSpace(body, j+1)
			if j >= len(body) {
				return "", false
			}
			if body[j] != '"' {
				return "", false
			}
			return decodePartialString(body[j+1:]), true
		}
		i += k + 1
	}
}

func skipJSONSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r') {
		i++
	}
	return i
}

// decodePartialString decodes a JSON string's content up to its closing
// quote or as far as complete escapes go.
func decodePartialString(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"':
			return b.String()
		case c != '\\':
			b.WriteByte(c)
			i++
			continue
		}
		if i+1 >= len(s) {
			return b.String()
		}
		switch e := s[i+1]; e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'b', 'f':
		case 'u':
			if i+6 > len(s) {
				return b.String()
			}
			r, err := strconv.ParseUint(s[i+2:i+6], 16, 32)
			if err != nil {
				return b.String()
			}
			if r >= 0xD800 && r < 0xDC00 { // a surrogate pair
				if i+12 > len(s) {
					return b.String()
				}
				lo, err := strconv.ParseUint(s[i+8:i+12], 16, 32)
				if err != nil || s[i+6] != '\\' || s[i+7] != 'u' {
					return b.String()
				}
				b.WriteRune(rune(0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)))
				i += 12
				continue
			}
			b.WriteRune(rune(r))
			i += 6
			continue
		default:
			b.WriteByte(e) // \" \\ \/
		}
		i += 2
	}
	return b.String()
}
