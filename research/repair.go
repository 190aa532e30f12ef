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
	p := &jsonRepair{s: s, i: start}
	for p.i < len(s) {
		if p.step() {
			return p.out.String(), p.i, true
		}
	}
	if len(p.stack) == 0 {
		return "", len(s), false
	}
	return p.cutOff()
}

// jsonRepair is repairJSON's reader: where it is in s, the output so far
// and the brackets open in it.
type jsonRepair struct {
	s         string
	i         int
	out       strings.Builder
	stack     []byte // '{' or '['
	expectKey bool
	after     bool // a value (or a key) just ended
	safeLen   int  // the output up to the last complete member
	safeStack []byte
}

// step reads one token at p.i; it reports true when the outermost value
// has closed.
func (p *jsonRepair) step() bool {
	s, c := p.s, p.s[p.i]
	switch {
	case c == '{' || c == '[':
		p.beginValue()
		p.stack = append(p.stack, c)
		p.out.WriteByte(c)
		p.expectKey, p.after = c == '{', false
		p.i++
	case c == '}' || c == ']':
		return p.close()
	case c == ',':
		if p.after {
			p.out.WriteByte(',')
		}
		p.after = false
		p.expectKey = len(p.stack) > 0 && p.stack[len(p.stack)-1] == '{'
		p.i++
	case c == ':':
		p.out.WriteByte(':')
		p.expectKey, p.after = false, false
		p.i++
	case c == '"' || c == '\'':
		p.str(c)
	case c == '/' && p.i+1 < len(s) && (s[p.i+1] == '/' || s[p.i+1] == '*'):
		p.comment()
	case c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9'):
		p.number()
	case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		p.out.WriteByte(c)
		p.i++
	default:
		p.word()
	}
	return false
}

// mark remembers the output so far as ending a complete member.
func (p *jsonRepair) mark() {
	p.safeLen = p.out.Len()
	p.safeStack = append(p.safeStack[:0], p.stack...)
}

// closers closes the brackets open in st, innermost first.
func closers(st []byte) string {
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

// trimComma drops a trailing comma from the output.
func (p *jsonRepair) trimComma() {
	t := strings.TrimRight(p.out.String(), " \t\r\n")
	if strings.HasSuffix(t, ",") {
		t = t[:len(t)-1]
		p.out.Reset()
		p.out.WriteString(t)
	}
}

// beginValue writes the comma a model left out between two values.
func (p *jsonRepair) beginValue() {
	if p.after && len(p.stack) > 0 {
		p.out.WriteByte(',')
		if p.stack[len(p.stack)-1] == '{' {
			p.expectKey = true
		}
	}
}

// close reads a closing bracket (whichever the open one needs); it reports
// true when it closed the outermost value.
func (p *jsonRepair) close() bool {
	if len(p.stack) == 0 {
		p.i++
		return false
	}
	p.trimComma()
	// A ':' left without a value gets null.
	if t := strings.TrimRight(p.out.String(), " \t\r\n"); strings.HasSuffix(t, ":") {
		p.out.WriteString("null")
	}
	top := p.stack[len(p.stack)-1]
	p.stack = p.stack[:len(p.stack)-1]
	if top == '{' {
		p.out.WriteByte('}')
	} else {
		p.out.WriteByte(']')
	}
	p.i++
	p.after, p.expectKey = true, false
	if len(p.stack) == 0 {
		return true
	}
	p.mark()
	return false
}

// str reads a string quoted with q, as a key or a value.
func (p *jsonRepair) str(q byte) {
	s := p.s
	p.beginValue()
	key := p.expectKey
	str, n, closed := readString(s[p.i:], q)
	p.out.WriteString(str)
	p.i += n
	if !closed {
		return
	}
	if key {
		// A key must be followed by ':'; a model may forget it.
		p.expectKey, p.after = false, false
		j := p.i
		for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
			j++
		}
		if j < len(s) && s[j] != ':' && s[j] != '\n' && s[j] != '\r' {
			p.out.WriteByte(':')
		}
		return
	}
	p.after = true
	p.mark()
}

// comment skips a // or /* */ comment.
func (p *jsonRepair) comment() {
	s, i := p.s, p.i
	if s[i+1] == '/' {
		if j := strings.IndexByte(s[i:], '\n'); j < 0 {
			p.i = len(s)
		} else {
			p.i += j
		}
		return
	}
	if j := strings.Index(s[i+2:], "*/"); j < 0 {
		p.i = len(s)
	} else {
		p.i += j + 4
	}
}

// number reads a number: a key when a key is expected; a stray sign or
// dot is skipped.
func (p *jsonRepair) number() {
	s := p.s
	j := p.i
	for j < len(s) && strings.IndexByte("0123456789+-.eE", s[j]) >= 0 {
		j++
	}
	num := s[p.i:j]
	p.i = j
	var f float64
	if _, err := fmt.Sscan(num, &f); err != nil {
		return // a stray sign or dot
	}
	p.beginValue()
	if p.expectKey {
		p.out.WriteString(`"` + num + `"`)
		p.expectKey, p.after = false, false
		return
	}
	b, _ := json.Marshal(f)
	if strings.Trim(num, "+-0123456789") == "" {
		b = []byte(strings.TrimPrefix(num, "+"))
	}
	p.out.Write(b)
	p.after = true
	p.mark()
}

// word reads a bare word: a key when a key is expected, else true, false,
// null in their many spellings, or a string; prose or punctuation between
// values is skipped.
func (p *jsonRepair) word() {
	s := p.s
	r, size := utf8.DecodeRuneInString(s[p.i:])
	if !unicode.IsLetter(r) && r != '_' && r != '$' {
		p.i += size // prose or punctuation between values
		return
	}
	j := p.i
	for j < len(s) {
		r, size := utf8.DecodeRuneInString(s[j:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '-' && r != '$' && r != '.' {
			break
		}
		j += size
	}
	word := s[p.i:j]
	p.i = j
	p.beginValue()
	if p.expectKey {
		b, _ := json.Marshal(word)
		p.out.Write(b)
		p.out.WriteByte(':')
		// skip the model's own ':' if any
		k := p.i
		for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
			k++
		}
		if k < len(s) && s[k] == ':' {
			p.i = k + 1
		}
		p.expectKey, p.after = false, false
		return
	}
	switch word {
	case "true", "True", "TRUE":
		p.out.WriteString("true")
	case "false", "False", "FALSE":
		p.out.WriteString("false")
	case "null", "None", "nil", "undefined", "NaN", "NULL":
		p.out.WriteString("null")
	default:
		b, _ := json.Marshal(word)
		p.out.Write(b)
	}
	p.after = true
	p.mark()
}

// cutOff ends a value cut off at the end of the text: close what is open,
// else go back to the last complete member.
func (p *jsonRepair) cutOff() (string, int, bool) {
	n := len(p.s)
	p.trimComma()
	tail := strings.TrimRight(p.out.String(), " \t\r\n")
	if strings.HasSuffix(tail, ":") {
		tail += "null"
	}
	if cand := tail + closers(p.stack); json.Valid([]byte(cand)) {
		return cand, n, true
	}
	cut := strings.TrimRight(p.out.String()[:p.safeLen], " \t\r\n,")
	if cand := cut + closers(p.safeStack); p.safeLen > 0 && json.Valid([]byte(cand)) {
		return cand, n, true
	}
	if len(p.stack) > 0 && p.stack[0] == '{' {
		return "{}", n, false
	}
	return "", n, false
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
