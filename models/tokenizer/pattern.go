package tokenizer

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// segment is a part of a string that a pattern matched or did not match.
// The segments of one find cover the whole string in order.
type segment struct {
	start, end int
	match      bool
}

// pattern finds what a split or a replacement acts on (HF's Pattern).
type pattern interface {
	find(s string) []segment
}

// runePattern matches every single character for which the function is true.
type runePattern func(rune) bool

func (p runePattern) find(s string) []segment {
	if s == "" {
		return []segment{{0, 0, false}}
	}
	var out []segment
	last := 0
	for i, r := range s {
		if !p(r) {
			continue
		}
		if last < i {
			out = append(out, segment{last, i, false})
		}
		end := i + utf8.RuneLen(r)
		if r == utf8.RuneError {
			_, sz := utf8.DecodeRuneInString(s[i:])
			end = i + sz
		}
		out = append(out, segment{i, end, true})
		last = end
	}
	if last < len(s) {
		out = append(out, segment{last, len(s), false})
	}
	return out
}

// stringPattern matches a literal string.
type stringPattern string

func (p stringPattern) find(s string) []segment {
	if p == "" {
		return []segment{{0, len(s), false}}
	}
	if s == "" {
		return []segment{{0, 0, false}}
	}
	var out []segment
	prev := 0
	for i := 0; i <= len(s)-len(p); {
		j := strings.Index(s[i:], string(p))
		if j < 0 {
			break
		}
		start := i + j
		if prev < start {
			out = append(out, segment{prev, start, false})
		}
		out = append(out, segment{start, start + len(p), true})
		prev = start + len(p)
		i = prev
	}
	if prev < len(s) {
		out = append(out, segment{prev, len(s), false})
	}
	return out
}

// regexPattern matches a regular expression.
type regexPattern struct{ re *regexp.Regexp }

func (p regexPattern) find(s string) []segment {
	if s == "" {
		return []segment{{0, 0, false}}
	}
	var out []segment
	prev := 0
	for _, m := range p.re.FindAllStringIndex(s, -1) {
		if prev != m[0] {
			out = append(out, segment{prev, m[0], false})
		}
		out = append(out, segment{m[0], m[1], true})
		prev = m[1]
	}
	if prev != len(s) {
		out = append(out, segment{prev, len(s), false})
	}
	return out
}

// invertPattern swaps what matched and what did not.
type invertPattern struct{ p pattern }

func (p invertPattern) find(s string) []segment {
	out := p.p.find(s)
	for i := range out {
		out[i].match = !out[i].match
	}
	return out
}

// wordPattern matches `\w+|[^\w\s]+` (the Whitespace pre-tokenizer's regex)
// without a regex engine, with the Unicode classes of Rust's regex crate.
type wordPattern struct{}

func (wordPattern) find(s string) []segment {
	if s == "" {
		return []segment{{0, 0, false}}
	}
	var out []segment
	prev := 0
	i := 0
	for i < len(s) {
		r, sz := utf8.DecodeRuneInString(s[i:])
		if isSpace(r) {
			i += sz
			continue
		}
		word := isWord(r)
		j := i + sz
		for j < len(s) {
			r2, sz2 := utf8.DecodeRuneInString(s[j:])
			if isSpace(r2) || isWord(r2) != word {
				break
			}
			j += sz2
		}
		if prev < i {
			out = append(out, segment{prev, i, false})
		}
		out = append(out, segment{i, j, true})
		prev = j
		i = j
	}
	if prev < len(s) {
		out = append(out, segment{prev, len(s), false})
	}
	return out
}

// isSpace is Unicode White_Space (Rust's char::is_whitespace, regex \s).
func isSpace(r rune) bool { return unicode.IsSpace(r) }

// isWord is regex \w: Alphabetic, marks, decimal digits, connector
// punctuation and the joiners.
func isWord(r rune) bool {
	if r < 0x80 {
		return r == '_' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'
	}
	return unicode.IsLetter(r) || unicode.In(r, unicode.M, unicode.Nd, unicode.Nl, unicode.Pc,
		unicode.Other_Alphabetic, unicode.Join_Control)
}

// isBertPunct is the punctuation of BERT's pre-tokenizer: ASCII punctuation
// (symbols included) and Unicode category P.
func isBertPunct(r rune) bool {
	if r < 0x80 {
		return '!' <= r && r <= '/' || ':' <= r && r <= '@' || '[' <= r && r <= '`' || '{' <= r && r <= '~'
	}
	return unicode.IsPunct(r)
}

// isNumeric is Rust's char::is_numeric: categories Nd, Nl and No.
func isNumeric(r rune) bool { return unicode.IsNumber(r) }

// Unicode meanings of the Perl classes, as Oniguruma (the HF library's
// regex engine) gives them; Go's are ASCII-only.
const (
	classSpace = `\t\n\v\f\r\x{85}\p{Z}`
	classWord  = `\p{L}\p{M}\p{Nd}\p{Nl}\p{Pc}\x{200C}\x{200D}`
	classDigit = `\p{Nd}`
)

// compileRegex compiles a tokenizer.json regex with Go's RE2, after giving
// \s, \w and \d (and their negations outside brackets) their Unicode
// meaning. Look-around and backreferences are not supported.
func compileRegex(pat string) (*regexp.Regexp, error) {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(pat); i++ {
		c := pat[i]
		switch {
		case c == '\\' && i+1 < len(pat):
			next := pat[i+1]
			i++
			var class string
			switch next {
			case 's', 'S':
				class = classSpace
			case 'w', 'W':
				class = classWord
			case 'd', 'D':
				class = classDigit
			}
			negated := next == 'S' || next == 'W' || next == 'D'
			switch {
			case class == "":
				b.WriteByte('\\')
				b.WriteByte(next)
			case inClass && !negated:
				b.WriteString(class)
			case inClass:
				b.WriteByte('\\')
				b.WriteByte(next)
			case negated:
				b.WriteString("[^" + class + "]")
			default:
				b.WriteString("[" + class + "]")
			}
		case c == '[' && !inClass:
			inClass = true
			b.WriteByte(c)
			// A ']' right after '[' or '[^' is a literal.
			if i+1 < len(pat) && pat[i+1] == '^' {
				b.WriteByte('^')
				i++
			}
			if i+1 < len(pat) && pat[i+1] == ']' {
				b.WriteByte(']')
				i++
			}
		case c == ']' && inClass:
			inClass = false
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return regexp.Compile(b.String())
}
