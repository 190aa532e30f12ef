package analysis

import (
	"html"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// PlainText turns a chunk's Markdown-ish text into plain text for display:
// heading, list, task, quote and table marks go, code fences go (their code
// stays), links and images become their text ([text](url), ![alt](url),
// [[target|alias]], SiYuan ((id "anchor"))), emphasis, strike-through,
// highlight and code marks go, HTML tags go and backslash escapes are
// resolved. Words and their order are kept, so a snippet cut from the result
// matches the query as the text does. Line breaks are kept; HTML entities
// are decoded.
func PlainText(md string) string {
	lines := strings.Split(md, "\n")
	out := make([]string, 0, len(lines))
	for _, line := range lines {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~"):
			if rest := strings.TrimLeft(t, "`~"); rest != "" && !strings.ContainsAny(rest, " \t") {
				continue // the opening fence with its language
			}
			if strings.Trim(t, "`~") == "" {
				continue
			}
		case isRule(t), tableDelimRe.MatchString(t):
			continue
		}
		t = blockMarks(t)
		if strings.HasPrefix(t, "|") || strings.HasSuffix(t, "|") || strings.Contains(t, " | ") {
			t = tableRow(t)
		}
		out = append(out, inlinePlain(t))
	}
	return strings.Join(out, "\n")
}

var (
	tableDelimRe = regexp.MustCompile(`^\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?$`)
	orderedRe    = regexp.MustCompile(`^\d{1,9}[.)](\s+|$)`)
	taskRe       = regexp.MustCompile(`^\[[ xX]\](\s+|$)`)
	headingRe    = regexp.MustCompile(`^#{1,6}(\s+|$)`)
	imageRe      = regexp.MustCompile(`!\[([^\]\n]*)\]\([^)\n]*\)`)
	linkRe       = regexp.MustCompile(`\[([^\]\n]*)\]\((?:<[^>\n]*>|[^)\s]*)(?:\s+(?:"[^"\n]*"|'[^'\n]*'))?\s*\)`)
	wikiRe       = regexp.MustCompile(`!?\[\[([^\]\n]+?)\]\]`)
	siyuanRefRe  = regexp.MustCompile(`\(\(\s*[0-9]{14}-[0-9a-z]{7}\s+(?:"([^"\n]*)"|'([^'\n]*)')\s*\)\)`)
	autolinkRe   = regexp.MustCompile(`<((?:https?|mailto|ftp):[^>\s]*)>`)
	htmlTagRe    = regexp.MustCompile(`</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>\n]*)?/?>`)
)

// tableRow replaces the cell separators of a table row with spaces; an
// escaped pipe (\|) is text.
func tableRow(t string) string {
	var b strings.Builder
	for i := 0; i < len(t); i++ {
		switch {
		case t[i] == '\\' && i+1 < len(t) && t[i+1] == '|':
			b.WriteByte('|')
			i++
		case t[i] == '|':
			b.WriteByte(' ')
		default:
			b.WriteByte(t[i])
		}
	}
	return strings.TrimSpace(b.String())
}

// isRule reports whether a trimmed line is a thematic break (---, ***, ___).
func isRule(t string) bool {
	if len(t) < 3 {
		return false
	}
	c := t[0]
	if c != '-' && c != '*' && c != '_' {
		return false
	}
	n := 0
	for i := 0; i < len(t); i++ {
		switch t[i] {
		case c:
			n++
		case ' ', '\t':
		default:
			return false
		}
	}
	return n >= 3
}

// blockMarks strips the marks that open a line: quotes, headings, list
// items and task boxes, nested in any order.
func blockMarks(t string) string {
	for {
		s := strings.TrimSpace(t)
		switch {
		case strings.HasPrefix(s, ">"):
			s = s[1:]
		case headingRe.MatchString(s):
			s = headingRe.ReplaceAllString(s, "")
			s = strings.TrimRight(strings.TrimRight(s, "#"), " ") // closing "##"
		case len(s) >= 2 && strings.ContainsRune("-*+", rune(s[0])) && (s[1] == ' ' || s[1] == '\t'):
			s = s[2:]
		case orderedRe.MatchString(s):
			s = orderedRe.ReplaceAllString(s, "")
		case taskRe.MatchString(s):
			s = taskRe.ReplaceAllString(s, "")
		default:
			return s
		}
		t = s
	}
}

// inlinePlain strips inline Markdown from one line.
func inlinePlain(s string) string {
	if s == "" {
		return s
	}
	s = imageRe.ReplaceAllString(s, "$1")
	s = linkRe.ReplaceAllString(s, "$1")
	s = wikiRe.ReplaceAllStringFunc(s, func(m string) string {
		inner := wikiRe.FindStringSubmatch(m)[1]
		if j := strings.IndexByte(inner, '|'); j >= 0 {
			return strings.TrimSpace(inner[j+1:])
		}
		target, heading, _ := strings.Cut(inner, "#")
		target, heading = strings.TrimSpace(target), strings.TrimSpace(strings.TrimPrefix(heading, "^"))
		switch {
		case target == "":
			return heading
		case heading != "":
			return target + " > " + heading
		}
		return target
	})
	s = siyuanRefRe.ReplaceAllString(s, "$1$2")
	s = autolinkRe.ReplaceAllString(s, "$1")
	s = htmlTagRe.ReplaceAllString(s, "")
	if strings.IndexByte(s, '&') >= 0 {
		s = html.UnescapeString(s) // &lt;keyword&gt; -> <keyword>
	}
	for _, mark := range []string{"**", "__", "~~", "=="} {
		s = strings.ReplaceAll(s, mark, "")
	}
	s = strings.ReplaceAll(s, "`", "")
	return flanking(s)
}

// flanking drops single emphasis marks (* and _) that open or close a run of
// text, a "#" that opens a tag (#idea), and resolves backslash escapes; a
// "_" inside a word (snake_case) and a lone "*" between spaces (2 * 3) stay.
func flanking(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	prev := ' '
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		next := ' '
		if i+size < len(s) {
			next, _ = utf8.DecodeRuneInString(s[i+size:])
		}
		switch {
		case r == '\\' && next < utf8.RuneSelf && unicode.IsPunct(next) || r == '\\' && next < utf8.RuneSelf && unicode.IsSymbol(next):
			// An escaped mark is the mark itself.
			b.WriteRune(next)
			prev = next
			i += size + 1
			continue
		case r == '*' || r == '_':
			keep := unicode.IsSpace(prev) && unicode.IsSpace(next) || // 2 * 3
				unicode.IsDigit(prev) && unicode.IsDigit(next) || // 2*3
				r == '_' && isWordRune(prev) && isWordRune(next) // snake_case
			if !keep {
				i += size
				continue // prev stays: the mark is gone
			}
		case r == '#' && !isWordRune(prev) && (unicode.IsLetter(next) || unicode.IsDigit(next)):
			i += size
			continue
		}
		b.WriteRune(r)
		prev = r
		i += size
	}
	return b.String()
}
