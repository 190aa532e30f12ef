package notes

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/exocortex/exocortex/schemas"
)

// ParseMarkdown turns one Markdown file into a DocChanged (envelope left empty).
// path is the file, content its bytes, and root the folder the document belongs
// to (the vault): wikilinks are resolved against every Markdown file under root. Version is the
// file's mtime, so path must exist. The DocID depends on the file alone (see
// MarkdownDocID), not on root. Content that is not valid UTF-8 is read as
// Windows-1251 when it looks like it, and otherwise has its invalid bytes
// replaced with U+FFFD (Walk reports which). Front matter that is not a YAML
// mapping is kept as plain text in the first block and gives no properties
// (Walk reports it).
//
// Each call indexes root afresh when the document has wikilinks; Walk shares
// one index across a whole folder.
func ParseMarkdown(path string, content []byte, root string) (*schemas.DocChanged, error) {
	v, err := newVault(root)
	if err != nil {
		return nil, err
	}
	return v.parse(path, content)
}

// isMarkdown reports whether a file name has a Markdown extension.
func isMarkdown(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".md", ".markdown":
		return true
	}
	return false
}

// trimMarkdownExt drops a .md or .markdown extension.
func trimMarkdownExt(name string) string {
	if isMarkdown(name) {
		return name[:len(name)-len(filepath.Ext(name))]
	}
	return name
}

// MarkdownDocID is the DocID of the Markdown file at path: "md-" + the first
// 16 hex digits of sha256 of its canonical path (absolute, clean, symlinks
// resolved, forward slashes). A file keeps its id whichever folder or
// subfolder is ingested, and two files never share one; a moved file gets a
// new id (Sync deletes the old one).
func MarkdownDocID(path string) string {
	sum := sha256.Sum256([]byte(filepath.ToSlash(Canonical(path))))
	return "md-" + hex.EncodeToString(sum[:])[:16]
}

// Canonical is path as the files source records it: made absolute and clean
// with symlinks resolved; a path that does not exist (any more) is only made
// absolute and clean.
func Canonical(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	return abs
}

// vault is a Markdown root folder and the index its wikilinks resolve against.
type vault struct {
	root string // absolute and clean
	// files are the Markdown files under root (slash-separated, relative,
	// sorted); byName maps a lower-cased base name without extension to them.
	// Both are nil until the first wikilink needs them (see index).
	files  []string
	byName map[string][]string
	ids    map[string]string // rel -> DocID, so links resolve symlinks once
	// onNote hears what was done to read a file that is not UTF-8.
	onNote func(path, note string)
}

func newVault(root string) (*vault, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("markdown root %s: %w", root, err)
	}
	return &vault{root: abs, ids: map[string]string{}}, nil
}

// docID is the DocID of the file at rel (slash-separated, under root).
func (v *vault) docID(rel string) string {
	id, ok := v.ids[rel]
	if !ok {
		id = MarkdownDocID(filepath.Join(v.root, filepath.FromSlash(rel)))
		v.ids[rel] = id
	}
	return id
}

// setFiles fills the wikilink index from rel paths the caller already listed.
func (v *vault) setFiles(rels []string) {
	v.files = make([]string, 0, len(rels))
	for _, r := range rels {
		v.files = append(v.files, filepath.ToSlash(r))
	}
	sort.Strings(v.files)
	v.byName = make(map[string][]string)
	for _, r := range v.files {
		key := strings.ToLower(trimMarkdownExt(path.Base(r)))
		v.byName[key] = append(v.byName[key], r)
	}
}

// index lists the Markdown files under root on first use. Folders that cannot
// be read are left out: a link into them simply does not resolve.
func (v *vault) index() {
	if v.byName != nil {
		return
	}
	var rels []string
	_ = filepath.WalkDir(v.root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if p != v.root && isHidden(d.Name()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() && isMarkdown(d.Name()) {
			if rel, err := filepath.Rel(v.root, p); err == nil {
				rels = append(rels, rel)
			}
		}
		return nil
	})
	v.setFiles(rels)
}

// parse builds the DocChanged of one file of the vault.
func (v *vault) parse(file string, content []byte) (*schemas.DocChanged, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, fmt.Errorf("markdown %s: %w", file, err)
	}
	rel, err := filepath.Rel(v.root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, fmt.Errorf("markdown %s: not under root %s", file, v.root)
	}
	rel = filepath.ToSlash(rel)
	info, err := os.Stat(abs)
	if err != nil {
		return nil, err // *PathError names the file
	}
	meta, body, raw, fmErr := v.readText(abs, content)

	sum := sha256.Sum256(content)
	doc := &schemas.DocChanged{
		DocID:    v.docID(rel),
		Source:   schemas.SourceMarkdown,
		Path:     abs,
		Notebook: v.root,
		Hash:     hex.EncodeToString(sum[:]),
		Version:  info.ModTime().UnixNano(),
	}
	if len(meta) > 0 {
		doc.Meta = meta
	}
	// A saved research report (front matter "exocortex: report") is indexed
	// but left out of retrieval by default.
	doc.Report = schemas.IsReportMeta(meta)

	p := &mdParser{vault: v, dir: filepath.Dir(abs), rel: rel, docID: doc.DocID, seen: map[string]int{}}
	if fmErr != nil {
		if t := strings.TrimSpace(strings.Join(raw, "\n")); t != "" {
			src := append(append([]string{"---"}, raw...), "---")
			p.add(schemas.BlockParagraph, "", 0, src, t, nil)
		}
	}
	lines := strings.Split(body, "\n")
	for i, l := range lines {
		lines[i] = expandIndent(l)
	}
	p.blocks(lines, "")
	doc.Blocks = p.out
	markdownMeta(doc, meta, info.ModTime())

	doc.Title = noteTitle(meta, doc.Blocks, abs)
	// TitlePath: the folders between root and the file, then the title.
	if dir := pathDir(rel); dir != "" {
		doc.TitlePath = strings.Split(dir, "/")
	}
	doc.TitlePath = append(doc.TitlePath, doc.Title)
	doc.BoundTitles() // the heading block keeps the whole text
	return doc, nil
}

// readText decodes a note's content (noting a repaired encoding), unifies
// its line ends and splits off its front matter. A front matter that
// cannot be read is returned in raw with fmErr (and noted): the note is
// then indexed without properties.
func (v *vault) readText(abs string, content []byte) (meta map[string]string, body string, raw []string, fmErr error) {
	utf, note := decodeText(content)
	var notes []string
	if note != "" {
		notes = append(notes, note)
	}
	text := strings.TrimPrefix(string(utf), "\uFEFF")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	meta, body, raw, fmErr = splitFrontMatter(text)
	if fmErr != nil {
		// What the user wrote is kept: the note is indexed, its front matter
		// as plain text in the first block, without properties.
		notes = append(notes, "front matter is "+frontMatterProblem(fmErr)+"; indexed without its properties")
	}
	if len(notes) > 0 && v.onNote != nil {
		v.onNote(abs, strings.Join(notes, "; "))
	}
	return meta, body, raw, fmErr
}

// noteTitle is a note's title: its front matter's, else its first level-1
// heading, else its file name without the extension.
func noteTitle(meta map[string]string, blocks []schemas.Block, abs string) string {
	if t := strings.TrimSpace(meta["title"]); t != "" {
		return t
	}
	for _, b := range blocks {
		if b.Type == schemas.BlockHeading && b.Level == 1 && b.Text != "" {
			return b.Text
		}
	}
	return trimMarkdownExt(filepath.Base(abs))
}

// pathDir is path.Dir for a slash-separated relative path, "" at the top.
func pathDir(rel string) string {
	if d := path.Dir(rel); d != "." {
		return d
	}
	return ""
}

// splitFrontMatter separates a leading YAML front matter block ("---" ...
// "---" or "...") from the body. Scalars become meta values; sequences of
// scalars are joined with ","; nested mappings are ignored. Tags lose a leading
// "#" and may also be given as one "a, b" or "a b" string. Without a closing
// line there is no front matter and the text is all body. When the block is
// not a YAML mapping, err says why, meta is nil, body is still the text after
// the block and raw holds the block's lines (without the "---" lines).
func splitFrontMatter(text string) (meta map[string]string, body string, raw []string, err error) {
	lines := strings.Split(text, "\n")
	if strings.TrimRight(lines[0], " \t") != "---" {
		return nil, text, nil, nil
	}
	end := -1
	for i := 1; i < len(lines); i++ {
		if t := strings.TrimRight(lines[i], " \t"); t == "---" || t == "..." {
			end = i
			break
		}
	}
	if end < 0 {
		return nil, text, nil, nil
	}
	body = strings.Join(lines[end+1:], "\n")
	raw = lines[1:end]

	var root yaml.Node
	if err := yaml.Unmarshal([]byte(strings.Join(raw, "\n")), &root); err != nil {
		return nil, body, raw, &frontMatterError{err: err}
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil, body, nil, nil // empty front matter
	}
	m := root.Content[0]
	if m.Kind != yaml.MappingNode {
		return nil, body, raw, &frontMatterError{notMapping: true}
	}
	meta = make(map[string]string)
	for i := 0; i+1 < len(m.Content); i += 2 {
		key := m.Content[i].Value
		val := m.Content[i+1]
		if val.Kind == yaml.AliasNode && val.Alias != nil {
			val = val.Alias
		}
		isTags := key == "tags" || key == "tag"
		var items []string
		switch val.Kind {
		case yaml.ScalarNode:
			if val.Tag == "!!null" {
				continue
			}
			if !isTags {
				meta[key] = val.Value
				continue
			}
			items = strings.FieldsFunc(val.Value, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
		case yaml.SequenceNode:
			for _, it := range val.Content {
				if it.Kind == yaml.ScalarNode && it.Tag != "!!null" {
					items = append(items, strings.TrimSpace(it.Value))
				}
			}
		default:
			continue
		}
		if isTags {
			for j := range items {
				items[j] = strings.TrimPrefix(items[j], "#")
			}
		}
		meta[key] = strings.Join(items, ",")
	}
	return meta, body, nil, nil
}

// frontMatterError is a front matter block that is not a YAML mapping: YAML
// that does not parse (err) or another kind of value (notMapping).
type frontMatterError struct {
	err        error
	notMapping bool
}

func (e *frontMatterError) Error() string { return "front matter is " + frontMatterProblem(e) }

func (e *frontMatterError) Unwrap() error { return e.err }

// yamlLineRe finds the line number in a yaml.v3 error ("yaml: line 3: ...").
var yamlLineRe = regexp.MustCompile(`^yaml: line ([0-9]+): `)

// frontMatterProblem says what is wrong with a front matter block, with line
// numbers counted in the file (the block starts on its second line).
func frontMatterProblem(err error) string {
	var fe *frontMatterError
	if !errors.As(err, &fe) || fe.err == nil {
		return "not a YAML mapping"
	}
	msg := fe.err.Error()
	if m := yamlLineRe.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		msg = "line " + strconv.Itoa(n+1) + ": " + msg[len(m[0]):]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	return "not valid YAML (" + msg + ")"
}

// expandIndent turns tabs in a line's leading whitespace into spaces (tab stop
// 4), so indentation can be measured in columns.
func expandIndent(line string) string {
	ws := len(line) - len(strings.TrimLeft(line, " \t"))
	if !strings.Contains(line[:ws], "\t") {
		return line
	}
	var b strings.Builder
	col := 0
	i := 0
	for ; i < len(line) && (line[i] == ' ' || line[i] == '\t'); i++ {
		if line[i] == '\t' {
			n := 4 - col%4
			b.WriteString(strings.Repeat(" ", n))
			col += n
		} else {
			b.WriteByte(' ')
			col++
		}
	}
	b.WriteString(line[i:])
	return b.String()
}

// The block parser is a small line-based reading of CommonMark + GFM, enough
// for notes: ATX and setext headings, paragraphs, fenced code, $$ math, lists,
// block quotes (Obsidian "> [!note]" callouts), pipe tables and HTML blocks.
// Indented code blocks are read as paragraphs; thematic breaks are skipped.

var (
	atxRe      = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	fenceRe    = regexp.MustCompile("^( {0,3})(`{3,}|~{3,})(.*)$")
	breakRe    = regexp.MustCompile(`^ {0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})$`)
	setextRe   = regexp.MustCompile(`^ {0,3}(=+|-+)[ \t]*$`)
	quoteRe    = regexp.MustCompile(`^ {0,3}> ?(.*)$`)
	calloutRe  = regexp.MustCompile(`^\[![A-Za-z-]+\]`)
	listRe     = regexp.MustCompile(`^( *)([-+*]|[0-9]{1,9}[.)])( +|$)(.*)$`)
	htmlRe     = regexp.MustCompile(`^ {0,3}<(?:!--|/?[A-Za-z][A-Za-z0-9-]*(?:[ \t]|/?>|$))`)
	delimRowRe = regexp.MustCompile(`^ {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$`)
)

// mdParser collects the blocks of one Markdown document.
type mdParser struct {
	vault *vault
	dir   string // the file's folder, for relative links
	rel   string // the file's path relative to the root
	docID string
	out   []schemas.Block
	seen  map[string]int // base block id -> how many times used
}

// add appends a block and returns its id: DocID + "#" + the first 12 hex of
// sha256(type + normalized source), with "-2", "-3"... for repeats. The source
// of a container includes its children, so a container's id changes when
// anything inside it does, while its siblings keep theirs.
func (p *mdParser) add(typ, parent string, level int, source []string, text string, refs []string) string {
	norm := strings.Join(strings.Fields(strings.Join(source, "\n")), " ")
	sum := sha256.Sum256([]byte(typ + "\n" + norm))
	id := p.docID + "#" + hex.EncodeToString(sum[:])[:12]
	p.seen[id]++
	if n := p.seen[id]; n > 1 {
		id += "-" + strconv.Itoa(n)
	}
	p.out = append(p.out, schemas.Block{ID: id, Type: typ, ParentID: parent, Level: level, Text: text, Refs: refs})
	return id
}

func isBlank(line string) bool { return strings.TrimSpace(line) == "" }

func indentOf(line string) int { return len(line) - len(strings.TrimLeft(line, " ")) }

// blocks parses lines (already dedented to their container) as blocks under parent.
func (p *mdParser) blocks(lines []string, parent string) {
	for i := 0; i < len(lines); {
		line := lines[i]
		switch {
		case isBlank(line):
			i++
		case isFenceOpen(line):
			i = p.code(lines, i, parent)
		case isMathOpen(line):
			i = p.math(lines, i, parent)
		case atxRe.MatchString(line):
			m := atxRe.FindStringSubmatch(line)
			text, refs := p.inline(strings.TrimSpace(m[2]))
			p.add(schemas.BlockHeading, parent, len(m[1]), lines[i:i+1], text, refs)
			i++
		case breakRe.MatchString(line):
			i++ // thematic break: no content
		case quoteRe.MatchString(line):
			i = p.quote(lines, i, parent)
		case listRe.MatchString(line):
			i = p.list(lines, i, parent)
		case htmlRe.MatchString(line):
			i = p.html(lines, i, parent)
		case isTableStart(lines, i):
			i = p.table(lines, i, parent)
		default:
			i = p.paragraph(lines, i, parent)
		}
	}
}

// interrupts reports whether lines[i] starts a block that ends a paragraph.
func interrupts(lines []string, i int) bool {
	line := lines[i]
	if isFenceOpen(line) || isMathOpen(line) ||
		atxRe.MatchString(line) || breakRe.MatchString(line) || quoteRe.MatchString(line) ||
		isTableStart(lines, i) {
		return true
	}
	// A list interrupts a paragraph when it is a bullet or starts at 1.
	if m := listRe.FindStringSubmatch(line); m != nil && strings.TrimSpace(m[4]) != "" {
		return m[2] == "-" || m[2] == "+" || m[2] == "*" || m[2][:len(m[2])-1] == "1"
	}
	return false
}

// isFenceOpen rejects backtick fences whose info string holds a backtick.
func isFenceOpen(line string) bool {
	m := fenceRe.FindStringSubmatch(line)
	return m != nil && !(m[2][0] == '`' && strings.Contains(m[3], "`"))
}

func isMathOpen(line string) bool {
	return strings.HasPrefix(strings.TrimSpace(line), "$$") && indentOf(line) <= 3
}

func isTableStart(lines []string, i int) bool {
	return i+1 < len(lines) && indentOf(lines[i]) <= 3 && strings.Contains(lines[i], "|") &&
		strings.Contains(lines[i+1], "|") && delimRowRe.MatchString(lines[i+1])
}

// paragraph reads consecutive non-blank lines; a "===" or "---" line under
// them makes a setext heading instead.
func (p *mdParser) paragraph(lines []string, i int, parent string) int {
	start := i
	var text []string
	for ; i < len(lines) && !isBlank(lines[i]); i++ {
		if i > start {
			if m := setextRe.FindStringSubmatch(lines[i]); m != nil {
				level := 2
				if m[1][0] == '=' {
					level = 1
				}
				t, refs := p.inline(strings.Join(text, " "))
				p.add(schemas.BlockHeading, parent, level, lines[start:i+1], t, refs)
				return i + 1
			}
			if interrupts(lines, i) {
				break
			}
		}
		text = append(text, strings.TrimSpace(lines[i]))
	}
	t, refs := p.inline(strings.Join(text, "\n"))
	p.add(schemas.BlockParagraph, parent, 0, lines[start:i], t, refs)
	return i
}

// code reads a fenced code block; Text is the fence line with its language,
// the code, and the closing fence.
func (p *mdParser) code(lines []string, i int, parent string) int {
	m := fenceRe.FindStringSubmatch(lines[i])
	indent, fence := len(m[1]), m[2]
	closeRe := regexp.MustCompile(`^ {0,3}` + regexp.QuoteMeta(fence[:1]) + `{` + strconv.Itoa(len(fence)) + `,}[ \t]*$`)
	start := i
	text := []string{strings.TrimSpace(lines[i])}
	for i++; i < len(lines); i++ {
		if closeRe.MatchString(lines[i]) {
			text = append(text, strings.TrimSpace(lines[i]))
			i++
			break
		}
		l := lines[i]
		if n := min(indent, indentOf(l)); n > 0 {
			l = l[n:]
		}
		text = append(text, l)
	}
	p.add(schemas.BlockCode, parent, 0, lines[start:i], strings.Join(text, "\n"), nil)
	return i
}

// math reads a $$ ... $$ block; Text is the formula without the delimiters.
func (p *mdParser) math(lines []string, i int, parent string) int {
	start := i
	first := strings.TrimSpace(lines[i])[2:]
	if strings.HasSuffix(first, "$$") { // $$ formula $$ on one line
		p.add(schemas.BlockMath, parent, 0, lines[i:i+1], strings.TrimSpace(strings.TrimSuffix(first, "$$")), nil)
		return i + 1
	}
	var text []string
	if strings.TrimSpace(first) != "" {
		text = append(text, first)
	}
	for i++; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		if strings.HasSuffix(t, "$$") {
			if t = strings.TrimSuffix(t, "$$"); t != "" {
				text = append(text, t)
			}
			i++
			break
		}
		text = append(text, lines[i])
	}
	p.add(schemas.BlockMath, parent, 0, lines[start:i], strings.TrimSpace(strings.Join(text, "\n")), nil)
	return i
}

// quote reads a block quote (a callout when it opens with "[!type]") and
// parses its content as child blocks. Lazy continuation lines count.
func (p *mdParser) quote(lines []string, i int, parent string) int {
	start := i
	var inner []string
	for ; i < len(lines); i++ {
		if m := quoteRe.FindStringSubmatch(lines[i]); m != nil {
			inner = append(inner, expandIndent(m[1]))
			continue
		}
		if isBlank(lines[i]) || isBlank(lines[i-1]) || interrupts(lines, i) || listRe.MatchString(lines[i]) {
			break
		}
		inner = append(inner, strings.TrimLeft(lines[i], " "))
	}
	typ := schemas.BlockQuote
	if len(inner) > 0 && calloutRe.MatchString(inner[0]) {
		typ = schemas.BlockCallout
	}
	id := p.add(typ, parent, 0, lines[start:i], "", nil)
	p.blocks(inner, id)
	return i
}

// html reads an HTML block up to a blank line (a comment up to its "-->").
func (p *mdParser) html(lines []string, i int, parent string) int {
	start := i
	comment := strings.HasPrefix(strings.TrimSpace(lines[i]), "<!--")
	for ; i < len(lines); i++ {
		if comment {
			if strings.Contains(lines[i], "-->") {
				i++
				break
			}
		} else if isBlank(lines[i]) {
			break
		}
	}
	text := strings.TrimSpace(strings.Join(lines[start:i], "\n"))
	p.add(schemas.BlockHTML, parent, 0, lines[start:i], text, nil)
	return i
}

// table reads a GFM pipe table: one block whose Text is the header and body
// rows as written (trimmed; the delimiter row is left out).
func (p *mdParser) table(lines []string, i int, parent string) int {
	start := i
	rows := []string{strings.TrimSpace(lines[i])}
	for i += 2; i < len(lines) && !isBlank(lines[i]) && !interrupts(lines, i); i++ {
		rows = append(rows, strings.TrimSpace(lines[i]))
	}
	text, refs := p.inline(strings.Join(rows, "\n"))
	p.add(schemas.BlockTable, parent, 0, lines[start:i], text, refs)
	return i
}

// listMark is a parsed list item marker line.
type listMark struct {
	indent  int    // columns before the marker
	marker  string // "-", "+", "*", or the ordered delimiter "." / ")"
	ordered bool
	content int    // column where the item's content starts
	text    string // the content on the marker line
}

func parseListMark(line string) (listMark, bool) {
	m := listRe.FindStringSubmatch(line)
	if m == nil || breakRe.MatchString(line) {
		return listMark{}, false
	}
	lm := listMark{indent: len(m[1]), marker: m[2], text: m[4]}
	if c := m[2][len(m[2])-1]; c == '.' || c == ')' {
		lm.ordered, lm.marker = true, string(c)
	}
	spaces := len(m[3])
	if spaces == 0 || spaces > 4 { // empty item, or indented code after the marker
		lm.text = strings.Repeat(" ", max(spaces-1, 0)) + m[4]
		spaces = 1
	}
	lm.content = lm.indent + len(m[2]) + spaces
	return lm, true
}

// listItem is one item's lines: src as written, body dedented to its content.
type listItem struct {
	src, body []string
}

// list reads a list: the list block, then per item a list_item whose Text is
// the item's own first lines (up to a blank line or a nested block), then the
// item's remaining content (nested lists, code, further paragraphs) as its
// children. Items belong together while they use the same marker kind.
func (p *mdParser) list(lines []string, i int, parent string) int {
	first, _ := parseListMark(lines[i])
	same := func(m listMark) bool { return m.ordered == first.ordered && m.marker == first.marker }

	start := i
	var items []*listItem
	var cur *listItem
	var curMark listMark
	for i < len(lines) {
		line := lines[i]
		if isBlank(line) {
			// A blank line stays in the list only if the list goes on after it.
			j := i
			for j < len(lines) && isBlank(lines[j]) {
				j++
			}
			if j == len(lines) {
				break
			}
			if indentOf(lines[j]) >= curMark.content {
				for ; i < j; i++ {
					cur.src = append(cur.src, lines[i])
					cur.body = append(cur.body, "")
				}
				continue
			}
			if m, ok := parseListMark(lines[j]); ok && same(m) {
				i = j
				continue
			}
			break
		}
		if cur != nil && indentOf(line) >= curMark.content {
			cur.src = append(cur.src, line)
			cur.body = append(cur.body, line[curMark.content:])
			i++
			continue
		}
		if m, ok := parseListMark(line); ok {
			if cur != nil && !same(m) {
				break // another kind of list starts here
			}
			cur, curMark = &listItem{src: []string{line}, body: []string{m.text}}, m
			items = append(items, cur)
			i++
			continue
		}
		// Lazy continuation of the item's paragraph.
		if cur != nil && !isBlank(lines[i-1]) && !interrupts(lines, i) && !htmlRe.MatchString(line) {
			cur.src = append(cur.src, line)
			cur.body = append(cur.body, strings.TrimLeft(line, " "))
			i++
			continue
		}
		break
	}

	listID := p.add(schemas.BlockList, parent, 0, lines[start:i], "", nil)
	for _, it := range items {
		// The item's own text: its first lines up to a blank line or a block.
		n := 0
		for n < len(it.body) && !isBlank(it.body[n]) && !(interrupts(it.body, n) || htmlRe.MatchString(it.body[n])) {
			n++
		}
		own := make([]string, n)
		for k := range own {
			own[k] = strings.TrimSpace(it.body[k])
		}
		text, refs := p.inline(strings.Join(own, "\n"))
		itemID := p.add(schemas.BlockListItem, listID, 0, it.src, text, refs)
		p.blocks(it.body[n:], itemID)
	}
	return i
}

// Inline text: wikilinks and Markdown links become their visible text and
// resolved links become refs; code spans are left untouched.

var linkRe = regexp.MustCompile(`(!?)\[\[([^\]\n]+?)\]\]|(!?)\[([^\]\n]*)\]\([ \t]*(<[^>\n]*>|[^)\s]*)(?:[ \t]+(?:"[^"\n]*"|'[^'\n]*'))?[ \t]*\)`)

var schemeRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// inline returns the visible text of s and the DocIDs it links to, in order
// of first appearance, each once.
func (p *mdParser) inline(s string) (string, []string) {
	var b strings.Builder
	var refs []string
	addRef := func(id string) { refs = appendNew(refs, id) }
	for s != "" {
		k := strings.IndexByte(s, '`')
		if k < 0 {
			b.WriteString(p.links(s, addRef))
			break
		}
		run := len(s[k:]) - len(strings.TrimLeft(s[k:], "`"))
		end := strings.Index(s[k+run:], s[k:k+run])
		if end < 0 { // unmatched backticks are literal text
			b.WriteString(p.links(s[:k+run], addRef))
			s = s[k+run:]
			continue
		}
		b.WriteString(p.links(s[:k], addRef))
		b.WriteString(s[k : k+run+end+run])
		s = s[k+run+end+run:]
	}
	return b.String(), refs
}

// links rewrites the links of a code-free piece of text.
func (p *mdParser) links(s string, addRef func(string)) string {
	return linkRe.ReplaceAllStringFunc(s, func(match string) string {
		m := linkRe.FindStringSubmatch(match)
		if m[2] != "" { // [[target#heading|alias]]
			inner := m[2]
			alias := ""
			if j := strings.IndexByte(inner, '|'); j >= 0 {
				inner, alias = inner[:j], strings.TrimSpace(inner[j+1:])
			}
			inner = strings.TrimSuffix(inner, `\`) // "\|" escapes the pipe inside tables
			target, heading := inner, ""
			if j := strings.IndexByte(inner, '#'); j >= 0 {
				target, heading = inner[:j], strings.TrimPrefix(inner[j+1:], "^")
			}
			target, heading = strings.TrimSpace(target), strings.TrimSpace(heading)
			if target != "" {
				if id := p.resolveWiki(target); id != "" {
					addRef(id)
				}
			}
			switch {
			case alias != "":
				return alias
			case target == "":
				return heading
			case heading != "":
				return target + " > " + heading
			}
			return target
		}
		text, dest := m[4], strings.Trim(m[5], "<>")
		if m[3] == "" { // images are not references
			if id := p.resolveRelative(dest); id != "" {
				addRef(id)
			}
		}
		return text
	})
}

// resolveWiki finds a wikilink target by file name (without extension,
// case-insensitive) anywhere under the root; a target with "/" matches the
// end of the path. Of several matches it prefers the linking file's folder,
// then the shortest path, then the first in sorted order.
func (p *mdParser) resolveWiki(target string) string {
	p.vault.index()
	t := strings.ToLower(trimMarkdownExt(filepath.ToSlash(target)))
	var cands []string
	if strings.Contains(t, "/") {
		t = strings.TrimPrefix(t, "/")
		for _, r := range p.vault.files {
			lr := strings.ToLower(trimMarkdownExt(r))
			if lr == t || strings.HasSuffix(lr, "/"+t) {
				cands = append(cands, r)
			}
		}
	} else {
		cands = p.vault.byName[t]
	}
	if len(cands) == 0 {
		return ""
	}
	here := pathDir(p.rel)
	best := slices.MinFunc(cands, func(a, b string) int {
		if ah, bh := pathDir(a) == here, pathDir(b) == here; ah != bh {
			if ah {
				return -1
			}
			return 1
		}
		if len(a) != len(b) {
			return len(a) - len(b)
		}
		return strings.Compare(a, b)
	})
	return p.vault.docID(best)
}

// resolveRelative resolves a Markdown link to another Markdown file: relative
// to the linking file, or to the root when it starts with "/". A link without
// an extension tries ".md". Links leaving the root, to hidden folders, to
// non-Markdown files or to missing files resolve to "".
func (p *mdParser) resolveRelative(dest string) string {
	if dest == "" || strings.HasPrefix(dest, "#") || schemeRe.MatchString(dest) || strings.HasPrefix(dest, "//") {
		return ""
	}
	if j := strings.IndexAny(dest, "#?"); j >= 0 {
		dest = dest[:j]
	}
	if u, err := url.PathUnescape(dest); err == nil {
		dest = u
	}
	base := p.dir
	if strings.HasPrefix(dest, "/") {
		base = p.vault.root
	}
	full := filepath.Join(base, filepath.FromSlash(dest))
	if filepath.Ext(full) == "" {
		full += ".md"
	}
	if !isMarkdown(full) {
		return ""
	}
	rel, err := filepath.Rel(p.vault.root, full)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return ""
	}
	for _, part := range strings.Split(filepath.ToSlash(rel), "/") {
		if isHidden(part) {
			return ""
		}
	}
	if info, err := os.Stat(full); err != nil || !info.Mode().IsRegular() {
		return ""
	}
	return p.vault.docID(filepath.ToSlash(rel))
}
