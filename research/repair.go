package research

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrNoJSON is the parse error of a reply that holds no JSON object or
// array at all.
var ErrNoJSON = errors.New("the reply holds no JSON object")

// maxCandidates bounds the JSON values looked for in one reply.
const maxCandidates = 8

var (
	fence     = regexp.MustCompile("(?s)```[A-Za-z0-9_-]*[ \t]*\\n?(.*?)```")
	openFence = regexp.MustCompile("(?s)```[A-Za-z0-9_-]*[ \t]*\\n(.*)$")
)

// jsonCandidates are the JSON texts a reply may hold, repaired: the
// contents of code fences (a last fence left open by a cut reply too),
// then each value that starts at a { or [ of the reply, as repairJSON reads
// it. The first ones are the likeliest.
func jsonCandidates(reply string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" && !seen[s] && len(out) < maxCandidates {
			seen[s] = true
			out = append(out, s)
		}
	}
	var fenced []string
	for _, m := range fence.FindAllStringSubmatch(reply, -1) {
		fenced = append(fenced, m[1])
	}
	rest := fence.ReplaceAllString(reply, "\n")
	if m := openFence.FindStringSubmatch(rest); m != nil {
		fenced = append(fenced, m[1])
	}
	for _, f := range fenced {
		if fixed, _, ok := repairJSON(f); ok {
			add(fixed)
		}
	}
	for from := 0; from < len(reply) && len(out) < maxCandidates; {
		i := strings.IndexAny(reply[from:], "{[")
		if i < 0 {
			break
		}
		fixed, used, ok := repairJSON(reply[from+i:])
		if ok {
			add(fixed)
			from += i + max(used, 1)
			continue
		}
		from += i + 1
	}
	return out
}

// repairJSON reads the JSON value that starts at the first { or [ of s the
// way a forgiving reader would, and writes it as valid JSON: text after the
// value is left out; keys and words without quotes, single-quoted strings,
// trailing commas, comments, raw line breaks and bad escapes in strings,
// Python's True/False/None, missing commas between values, and a value cut
// off at the end (its open strings and brackets closed, an incomplete
// member dropped) are repaired. used is how many bytes of s it read; ok is
// false when no value could be made of it.
func repairJSON(s string) (fixed string, used int, ok bool) {
	start := strings.IndexAny(s, "{[")
	if start < 0 {
		return "", 0, false
	}
	var (
		out       strings.Builder
		stack     []byte // '{' or '['
		expectKey bool
		after     bool // a value (or a key) just ended
		safeLen   int  // the output up to the last complete member
		safeStack []byte
		i         = start
	)
	mark := func() {
		safeLen = out.Len()
		safeStack = append(safeStack[:0], stack...)
	}
	closers := func(st []byte) string {
		var b strings.Builder
		for k := len(st) - 1; k >= 0; k-- {
			if st[k] == '{' {
				b.WriteByte('}')
			} else {
				b.WriteByte(']')
			}
		}
		return b.String()
	}
	trimComma := func() {
		t := strings.TrimRight(out.String(), " \t\r\n")
		if strings.HasSuffix(t, ",") {
			t = t[:len(t)-1]
			out.Reset()
			out.WriteString(t)
		}
	}
	// beginValue writes the comma a model left out between two values.
	beginValue := func() {
		if after && len(stack) > 0 {
			out.WriteByte(',')
			if stack[len(stack)-1] == '{' {
				expectKey = true
			}
		}
	}
	for i < len(s) {
		c := s[i]
		switch {
		case c == '{' || c == '[':
			beginValue()
			stack = append(stack, c)
			out.WriteByte(c)
			expectKey, after = c == '{', false
			i++
		case c == '}' || c == ']':
			if len(stack) == 0 {
				i++
				continue
			}
			trimComma()
			// A ':' left without a value gets null.
			if t := strings.TrimRight(out.String(), " \t\r\n"); strings.HasSuffix(t, ":") {
				out.WriteString("null")
			}
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if top == '{' {
				out.WriteByte('}')
			} else {
				out.WriteByte(']')
			}
			i++
			after, expectKey = true, false
			if len(stack) == 0 {
				return out.String(), i, true
			}
			mark()
		case c == ',':
			if after {
				out.WriteByte(',')
			}
			after = false
			expectKey = len(stack) > 0 && stack[len(stack)-1] == '{'
			i++
		case c == ':':
			out.WriteByte(':')
			expectKey, after = false, false
			i++
		case c == '"' || c == '\'':
			beginValue()
			key := expectKey
			str, n, closed := readString(s[i:], c)
			out.WriteString(str)
			i += n
			if !closed {
				break
			}
			if key {
				// A key must be followed by ':'; a model may forget it.
				expectKey, after = false, false
				j := i
				for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
					j++
				}
				if j < len(s) && s[j] != ':' && s[j] != '\n' && s[j] != '\r' {
					out.WriteByte(':')
				}
				break
			}
			after = true
			mark()
		case c == '/' && i+1 < len(s) && (s[i+1] == '/' || s[i+1] == '*'):
			if s[i+1] == '/' {
				j := strings.IndexByte(s[i:], '\n')
				if j < 0 {
					i = len(s)
				} else {
					i += j
				}
			} else {
				j := strings.Index(s[i+2:], "*/")
				if j < 0 {
					i = len(s)
				} else {
					i += j + 4
				}
			}
		case c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9'):
			j := i
			for j < len(s) && strings.IndexByte("0123456789+-.eE", s[j]) >= 0 {
				j++
			}
			num := s[i:j]
			i = j
			var f float64
			if _, err := fmt.Sscan(num, &f); err != nil {
				continue // a stray sign or dot
			}
			beginValue()
			if expectKey {
				out.WriteString(`"` + num + `"`)
				expectKey, after = false, false
				continue
			}
			b, _ := json.Marshal(f)
			if strings.Trim(num, "+-0123456789") == "" {
				b = []byte(strings.TrimPrefix(num, "+"))
			}
			out.Write(b)
			after = true
			mark()
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			out.WriteByte(c)
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if !unicode.IsLetter(r) && r != '_' && r != '$' {
				i += size // prose or punctuation between values
				continue
			}
			j := i
			for j < len(s) {
				r, size := utf8.DecodeRuneInString(s[j:])
				if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '-' && r != '$' && r != '.' {
					break
				}
				j += size
			}
			word := s[i:j]
			i = j
			beginValue()
			if expectKey {
				b, _ := json.Marshal(word)
				out.Write(b)
				out.WriteByte(':')
				// skip the model's own ':' if any
				k := i
				for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
					k++
				}
				if k < len(s) && s[k] == ':' {
					i = k + 1
				}
				expectKey, after = false, false
				continue
			}
			switch word {
			case "true", "True", "TRUE":
				out.WriteString("true")
			case "false", "False", "FALSE":
				out.WriteString("false")
			case "null", "None", "nil", "undefined", "NaN", "NULL":
				out.WriteString("null")
			default:
				b, _ := json.Marshal(word)
				out.Write(b)
			}
			after = true
			mark()
		}
	}
	if len(stack) == 0 {
		return "", len(s), false
	}
	// Cut off: close what is open, else go back to the last complete member.
	trimComma()
	tail := strings.TrimRight(out.String(), " \t\r\n")
	if strings.HasSuffix(tail, ":") {
		tail += "null"
	}
	if cand := tail + closers(stack); json.Valid([]byte(cand)) {
		return cand, len(s), true
	}
	cut := strings.TrimRight(out.String()[:safeLen], " \t\r\n,")
	if cand := cut + closers(safeStack); safeLen > 0 && json.Valid([]byte(cand)) {
		return cand, len(s), true
	}
	if len(stack) > 0 && stack[0] == '{' {
		return "{}", len(s), false
	}
	return "", len(s), false
}

// readString reads a string that starts with quote at s[0] and returns it
// as a JSON string: raw control characters escaped, bad escapes mended, a
// quote inside it that does not end it (the next character is no , : } ]
// or line end) kept as a character. closed is false when s ends first (the
// string is closed then).
func readString(s string, quote byte) (str string, n int, closed bool) {
	var b strings.Builder
	b.WriteByte('"')
	i := 1
	for i < len(s) {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			next := s[i+1]
			switch {
			case next == '\'':
				b.WriteByte('\'')
			case strings.IndexByte(`"\/bfnrt`, next) >= 0:
				b.WriteByte('\\')
				b.WriteByte(next)
			case next == 'u' && i+5 < len(s) && isHex(s[i+2:i+6]):
				b.WriteString(s[i : i+6])
				i += 6
				continue
			default:
				b.WriteString(`\\`)
				b.WriteByte(next)
			}
			i += 2
		case c == quote && endsString(s[i+1:]):
			b.WriteByte('"')
			return b.String(), i + 1, true
		case c == '"':
			b.WriteString(`\"`)
			i++
		case c == '\n':
			b.WriteString(`\n`)
			i++
		case c == '\r':
			b.WriteString(`\r`)
			i++
		case c == '\t':
			b.WriteString(`\t`)
			i++
		case c < 0x20:
			fmt.Fprintf(&b, `\u%04x`, c)
			i++
		default:
			b.WriteByte(c)
			i++
		}
	}
	b.WriteByte('"')
	return b.String(), len(s), false
}

// endsString tells whether a quote followed by rest closes its string:
// what follows is , : } ] or the end, or a line break and then a quote, a
// closing bracket or the end (a member whose comma was left out).
func endsString(rest string) bool {
	rest = strings.TrimLeft(rest, " \t")
	if rest == "" {
		return true
	}
	switch rest[0] {
	case ',', ':', '}', ']':
		return true
	case '\n', '\r':
		rest = strings.TrimLeft(rest, " \t\r\n")
		return rest == "" || strings.IndexByte("\"'}]", rest[0]) >= 0
	}
	return false
}

func isHex(s string) bool {
	for _, c := range []byte(s) {
		if !strings.ContainsRune("0123456789abcdefABCDEF", rune(c)) {
			return false
		}
	}
	return true
}

// normKey is a key as the research parsers look it up: lower case, words
// joined by '_' (camelCase, kebab-case and spaces too).
func normKey(k string) string {
	var b strings.Builder
	prevLower := false
	for _, r := range strings.TrimSpace(k) {
		switch {
		case r == '-' || r == ' ' || r == '.':
			b.WriteByte('_')
			prevLower = false
		case unicode.IsUpper(r):
			if prevLower {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
			prevLower = false
		default:
			b.WriteRune(r)
			prevLower = unicode.IsLower(r) || unicode.IsDigit(r)
		}
	}
	return b.String()
}

// replyValues are the JSON objects and arrays a reply holds, repaired
// (field looks their keys up in any spelling). err says why there is none: ErrNoJSON, or the
// decoder's error on the likeliest candidate.
func replyValues(reply string) ([]any, error) {
	var out []any
	var first error
	for _, cand := range jsonCandidates(reply) {
		var v any
		if err := json.Unmarshal([]byte(cand), &v); err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		switch v.(type) {
		case map[string]any, []any:
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		if first != nil {
			return nil, first
		}
		return nil, ErrNoJSON
	}
	return out, nil
}

// field is the value of the first of keys (in normKey form) that m has
// under any spelling ("subQuestions", "Sub-Questions"), not null.
func field(m map[string]any, keys ...string) (any, bool) {
	for _, k := range keys {
		if v, ok := m[k]; ok && v != nil {
			return v, true
		}
	}
	for _, k := range keys {
		for mk, v := range m {
			if v != nil && normKey(mk) == k {
				return v, true
			}
		}
	}
	return nil, false
}

// has tells whether m has key (in normKey form) under any spelling, null
// or not.
func has(m map[string]any, key string) bool {
	for mk := range m {
		if normKey(mk) == key {
			return true
		}
	}
	return false
}

// unwrap is the value inside a one-key wrapper object ({"result": {...}}),
// or v itself.
func unwrap(v any) any {
	for range 3 {
		m, ok := v.(map[string]any)
		if !ok || len(m) != 1 {
			return v
		}
		for _, x := range m {
			switch x.(type) {
			case map[string]any, []any:
				v = x
			default:
				return v
			}
		}
	}
	return v
}

// text is v as a string: a string, a number, or the first string field of
// an object among keys.
func text(v any, keys ...string) string {
	switch t := v.(type) {
	case string:
		return strings.TrimSpace(t)
	case float64:
		return strings.TrimSpace(fmt.Sprint(t))
	case map[string]any:
		if x, ok := field(t, keys...); ok {
			return text(x)
		}
	}
	return ""
}

// list is v as a list: an array, or a lone value as a list of one.
func list(v any) []any {
	switch t := v.(type) {
	case nil:
		return nil
	case []any:
		return t
	case string:
		if strings.TrimSpace(t) == "" {
			return nil
		}
	}
	return []any{v}
}

// ids is v as a list of ids: strings, numbers (n: prefix+n), objects with
// an "id"; a string of several ids separated by commas is split.
func ids(v any, prefix string) []string {
	var out []string
	for _, x := range list(v) {
		var s string
		switch t := x.(type) {
		case float64:
			s = prefix + fmt.Sprint(int(t))
		case string:
			for _, part := range strings.FieldsFunc(t, func(r rune) bool { return r == ',' || r == ';' || r == ' ' }) {
				if part = strings.Trim(part, `[]()"'`); part != "" {
					out = append(out, part)
				}
			}
			continue
		case map[string]any:
			s = text(t, "id", "block_id", "fact_id", "block")
		}
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// ReplyError is a structured reply that could not be read, after the
// repairs and the retries: why, the last reply, and how many replies were
// asked for.
type ReplyError struct {
	What     string // "plan", "fact step", "outline", "report"
	Attempts int
	Err      error
	Reply    string
}

func (e *ReplyError) Error() string {
	return fmt.Sprintf("the %s reply is not the JSON asked for after %d attempts: %v (reply starts %q)", e.What, e.Attempts, e.Err, head(e.Reply, 80))
}

func (e *ReplyError) Unwrap() error { return e.Err }

func head(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}
