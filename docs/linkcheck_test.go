package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// A brokenLink is a relative link that names no file, or an anchor that
// names no heading of its file.
type brokenLink struct {
	File   string // the Markdown file holding the link, relative to the root
	Target string // the link as written
	Why    string
}

func (b brokenLink) String() string { return fmt.Sprintf("%s: (%s): %s", b.File, b.Target, b.Why) }

var (
	fence       = regexp.MustCompile("^\\s*(```|~~~)")
	heading     = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	inlineLink  = regexp.MustCompile(`!?\[([^\]]*)\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	schemePart  = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	emphasis    = regexp.MustCompile(`\*+|~~`)
	linkInTitle = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// checkLinks reads the Markdown files start (paths relative to root), and
// every Markdown file inside root that they link, in turn, and returns each
// relative link whose file does not exist and each anchor that is not a
// heading of its file as GitHub names headings. Links with a scheme
// (https:, siyuan:, mailto:) are not followed.
func checkLinks(root string, start []string) ([]brokenLink, error) {
	var broken []brokenLink
	anchors := map[string]map[string]bool{} // file -> anchors, read once
	seen := map[string]bool{}
	queue := append([]string(nil), start...)
	for len(queue) > 0 {
		file := filepath.ToSlash(filepath.Clean(queue[0]))
		queue = queue[1:]
		if seen[file] {
			continue
		}
		seen[file] = true
		raw, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", file, err)
		}
		text, heads := splitMarkdown(string(raw))
		anchors[file] = heads
		for _, target := range linkTargets(text) {
			linked, b := resolve(root, file, target)
			if b != nil {
				broken = append(broken, *b)
				continue
			}
			if linked.md && !seen[linked.path] {
				queue = append(queue, linked.path)
			}
			if linked.anchor == "" {
				continue
			}
			if !linked.md {
				broken = append(broken, brokenLink{file, target, "an anchor into a file that is not Markdown"})
				continue
			}
			heads, ok := anchors[linked.path]
			if !ok {
				raw, err := os.ReadFile(filepath.Join(root, linked.path))
				if err != nil {
					return nil, fmt.Errorf("read %s: %w", linked.path, err)
				}
				_, heads = splitMarkdown(string(raw))
				anchors[linked.path] = heads
			}
			if !heads[strings.ToLower(linked.anchor)] {
				broken = append(broken, brokenLink{file, target, fmt.Sprintf("%s has no heading with the anchor #%s", linked.path, linked.anchor)})
			}
		}
	}
	return broken, nil
}

type linkedFile struct {
	path   string // relative to the root, slash-separated
	anchor string
	md     bool
}

// resolve turns a link written in file into the file it names, or says why
// it names none.
func resolve(root, file, target string) (linkedFile, *brokenLink) {
	if schemePart.MatchString(target) || strings.HasPrefix(target, "//") {
		return linkedFile{}, nil // external: not ours to check
	}
	pathPart, anchor, _ := strings.Cut(target, "#")
	pathPart, _, _ = strings.Cut(pathPart, "?")
	if pathPart == "" {
		return linkedFile{path: file, anchor: anchor, md: true}, nil
	}
	if strings.HasPrefix(pathPart, "/") {
		return linkedFile{}, &brokenLink{file, target, "an absolute path: write it relative to " + file}
	}
	p := filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(file), pathPart)))
	if p == ".." || strings.HasPrefix(p, "../") {
		return linkedFile{}, &brokenLink{file, target, "points outside the repository"}
	}
	info, err := os.Stat(filepath.Join(root, p))
	if err != nil {
		return linkedFile{}, &brokenLink{file, target, p + " does not exist"}
	}
	md := !info.IsDir() && strings.EqualFold(filepath.Ext(p), ".md")
	return linkedFile{path: p, anchor: anchor, md: md}, nil
}

// splitMarkdown returns the text outside fenced code blocks and the anchors
// of the headings, numbered as GitHub numbers repeated ones (x, x-1, x-2).
func splitMarkdown(src string) (string, map[string]bool) {
	var text strings.Builder
	heads := map[string]bool{}
	count := map[string]int{}
	inFence := false
	for _, line := range strings.Split(src, "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		text.WriteString(line)
		text.WriteByte('\n')
		if m := heading.FindStringSubmatch(line); m != nil {
			slug := githubAnchor(m[2])
			if n := count[slug]; n > 0 {
				heads[fmt.Sprintf("%s-%d", slug, n)] = true
			} else {
				heads[slug] = true
			}
			count[slug]++
		}
	}
	return text.String(), heads
}

// linkTargets lists the targets of the inline links in text, leaving out
// what is inside code spans.
func linkTargets(text string) []string {
	var targets []string
	for _, m := range inlineLink.FindAllStringSubmatch(stripCodeSpans(text), -1) {
		targets = append(targets, m[2])
	}
	return targets
}

// stripCodeSpans replaces each code span (a run of backticks up to the next
// run of the same length, across lines too) with the word "code", so that
// a link written inside one is not taken for a link.
func stripCodeSpans(text string) string {
	var b strings.Builder
	for i := 0; i < len(text); {
		if text[i] != '`' {
			b.WriteByte(text[i])
			i++
			continue
		}
		n := backticksAt(text, i)
		end := -1
		for j := i + n; j < len(text); {
			if text[j] != '`' {
				j++
				continue
			}
			m := backticksAt(text, j)
			if m == n {
				end = j + m
				break
			}
			j += m
		}
		if end < 0 { // no closing run: the backticks are literal
			b.WriteString(text[i : i+n])
			i += n
			continue
		}
		b.WriteString("code")
		i = end
	}
	return b.String()
}

func backticksAt(text string, i int) int {
	n := 0
	for i+n < len(text) && text[i+n] == '`' {
		n++
	}
	return n
}

// githubAnchor is the id GitHub gives a heading: its rendered text in lower
// case, with every character that is not a letter, a digit, a space, a
// hyphen or an underscore removed and every space turned into a hyphen.
func githubAnchor(title string) string {
	title = linkInTitle.ReplaceAllString(title, "$1")
	title = strings.ReplaceAll(title, "`", "")
	title = emphasis.ReplaceAllString(title, "")
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}
