package chunking

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/lang"
	"github.com/exocortex/exocortex/schemas"
)

// Piece is one chunk of a document before it becomes a schemas.ChunkCreated.
type Piece struct {
	// ID is DocID + ":" + 16 hex digits of the sha256 of the chunk's block ids
	// (and part numbers of split blocks). It depends on which blocks the chunk
	// covers, not on their text, so editing a block keeps its chunk's id.
	ID string
	// Ordinal is the chunk's position in the document (0-based).
	Ordinal int
	// Text is the overlap from the previous chunk (if any), then the covered
	// blocks' text, blocks separated by blank lines; headings as "## Heading",
	// list items as "- item".
	Text string
	// SectionPath is the document's title path, then the headings in force at
	// the chunk's first own block; a top heading that reads as the title (a
	// Markdown note's "# Title") is not repeated.
	SectionPath []string
	// Lang is lang.DetectLang(Text).
	Lang string
	// BlockIDs are the blocks whose text the chunk covers, in document order; a
	// container comes before its children when its whole subtree is inside.
	// Blocks of the overlap are not listed.
	BlockIDs []string
	// BlockSpans place each block's own text in Text: Text[Start:End] is the
	// block's rendered text (a heading's "## ", a list item's "- " included).
	// A part of a split block is one span with the block's id; the overlap
	// has spans of the blocks it came from, clipped to what of them it holds.
	// Spans are in order and do not overlap; a block without text of its own
	// (a container) has none. A block whose own text addresses an AI
	// assistant or gives it orders has Instruction set on all its spans.
	BlockSpans []schemas.BlockSpan
	// Refs are the sorted, unique refs of the covered blocks.
	Refs []string
	// Tokens is lang.EstimateTokens(Text), never above MaxTokens.
	Tokens int
	// Hash is the sha256 (hex) of Text.
	Hash string
}

// Split cuts a document into chunks. It is pure and deterministic.
//
// Top-level blocks (with their subtrees) are the units; a unit over MaxTokens
// is replaced by its children, recursively, and a single block over MaxTokens
// is cut at sentence boundaries (then words) into parts that all carry its id.
// Units are packed in document order up to MaxTokens; a heading of level 1-2
// starts a new chunk once the chunk or its section has MinTokens/2 tokens, so
// sections start chunks and an edit inside one section leaves the chunks of
// the others alone. A chunk that continues a section starts with about
// OverlapTokens of the previous chunk's tail. A deleted document, or one
// without text, has no chunks.
func Split(doc *schemas.DocChanged, cfg Config) []Piece {
	if doc == nil || doc.Deleted || len(doc.Blocks) == 0 {
		return nil
	}
	s := &splitter{cfg: cfg.sane(), doc: doc}
	roots := s.build()
	for _, n := range roots {
		s.expand(n)
	}
	if len(s.units) == 0 {
		return nil
	}
	spans := s.pack()
	s.rebalance(spans)
	pieces := s.render(spans)
	s.flagInstructions(pieces)
	return pieces
}

// flagInstructions sets Instruction on every span of a block whose own text
// addresses an AI assistant or gives it orders (analysis.Instruction): the
// spans of all parts of a split block, and of the overlap, too.
func (s *splitter) flagInstructions(pieces []Piece) {
	flagged := map[string]bool{}
	for i := range s.nodes {
		if n := &s.nodes[i]; n.text != "" {
			if _, ok := analysis.Instruction(n.text); ok {
				flagged[n.block.ID] = true
			}
		}
	}
	if len(flagged) == 0 {
		return
	}
	for i := range pieces {
		for k := range pieces[i].BlockSpans {
			if sp := &pieces[i].BlockSpans[k]; flagged[sp.ID] {
				sp.Instruction = true
			}
		}
	}
}

// node is a block in the document's tree.
type node struct {
	block    *schemas.Block
	index    int
	text     string // the rendered own text; "" when the block has none
	tokens   int    // tokens of text
	sub      int    // tokens of the whole subtree
	hasText  bool   // whether the subtree has any text
	children []*node
}

func (n *node) heading() int {
	if n.block.Type != schemas.BlockHeading {
		return 0
	}
	return headingLevel(n.block.Level)
}

func headingLevel(l int) int { return min(max(l, 1), 6) }

// unit is what chunks are packed from: a block with its whole subtree, the own
// text of a container too big to stay whole, or a part of a block too big for
// a chunk.
type unit struct {
	ids     []string
	first   int // index of the first block, for the section path
	text    string
	tokens  int
	heading int    // heading level when the unit is a heading, else 0
	leaf    string // the split block, "" unless the unit is a part
	part    int    // the part's number within leaf
	// spans place the blocks' own texts in text.
	spans []schemas.BlockSpan
}

// sectionStart tells whether u opens a level 1-2 section.
func (u *unit) sectionStart() bool { return u.heading == 1 || u.heading == 2 }

// span is a chunk as a range of units.
type span struct {
	lo, hi int // units[lo:hi]
	own    int // tokens of those units
}

type splitter struct {
	cfg   Config
	doc   *schemas.DocChanged
	nodes []node
	byID  map[string]*node
	// paths[i] are the heading texts in force at block i (block i included).
	paths  [][]string
	bullet string // a list item's marker waiting for the item's first text
	units  []unit
}

// build links the blocks into a tree (a parent must come before its children;
// a block with an unknown parent is top-level) and renders their text.
func (s *splitter) build() []*node {
	blocks := s.doc.Blocks
	s.nodes = make([]node, len(blocks))
	s.byID = make(map[string]*node, len(blocks))
	s.paths = make([][]string, len(blocks))
	var roots []*node
	type heading struct {
		level int
		text  string
	}
	var stack []heading
	var path []string
	for i := range blocks {
		b := &blocks[i]
		n := &s.nodes[i]
		n.block, n.index = b, i
		if p, ok := s.byID[b.ParentID]; ok && b.ParentID != "" {
			p.children = append(p.children, n)
		} else {
			roots = append(roots, n)
		}
		if _, dup := s.byID[b.ID]; !dup {
			s.byID[b.ID] = n
		}
		if b.Type == schemas.BlockHeading {
			level := headingLevel(b.Level)
			for len(stack) > 0 && stack[len(stack)-1].level >= level {
				stack = stack[:len(stack)-1]
			}
			if t := strings.TrimSpace(b.Text); t != "" {
				stack = append(stack, heading{level, t})
			}
			path = make([]string, len(stack))
			for k, h := range stack {
				path[k] = h.text
			}
		}
		s.paths[i] = path
	}
	for _, n := range roots {
		s.prepare(n, 0)
	}
	return roots
}

// prepare renders the text of n's subtree and sums its tokens. depth counts
// the list items around n.
func (s *splitter) prepare(n *node, depth int) {
	item := n.block.Type == schemas.BlockListItem
	if item {
		s.bullet = strings.Repeat("  ", depth) + "- "
		depth++
	}
	if t := strings.TrimSpace(n.block.Text); t != "" {
		if l := n.heading(); l > 0 {
			t = strings.Repeat("#", l) + " " + t
		}
		if s.bullet != "" {
			t = s.bullet + t
			s.bullet = ""
		}
		n.text, n.tokens, n.hasText = t, lang.EstimateTokens(t), true
	}
	n.sub = n.tokens
	for _, c := range n.children {
		s.prepare(c, depth)
		n.sub += c.sub
		n.hasText = n.hasText || c.hasText
	}
	if item {
		s.bullet = "" // an item without text does not pass its marker on
	}
}

// expand turns n into units: whole when it fits, else its own text and its
// children's units, or parts when it is a single block too big for a chunk.
func (s *splitter) expand(n *node) {
	if !n.hasText {
		return
	}
	if n.sub <= s.cfg.MaxTokens {
		u := unit{first: n.index, tokens: n.sub, heading: n.heading()}
		var texts []string
		var walk func(*node)
		at := 0
		walk = func(m *node) {
			u.ids = append(u.ids, m.block.ID)
			if m.text != "" {
				if len(texts) > 0 {
					at += len("\n\n")
				}
				texts = append(texts, m.text)
				u.spans = append(u.spans, schemas.BlockSpan{ID: m.block.ID, Start: at, End: at + len(m.text)})
				at += len(m.text)
			}
			for _, c := range m.children {
				walk(c)
			}
		}
		walk(n)
		u.text = strings.Join(texts, "\n\n")
		s.units = append(s.units, u)
		return
	}
	if n.text != "" {
		if n.tokens <= s.cfg.MaxTokens {
			s.units = append(s.units, unit{ids: []string{n.block.ID}, first: n.index,
				text: n.text, tokens: n.tokens, heading: n.heading(),
				spans: []schemas.BlockSpan{{ID: n.block.ID, Start: 0, End: len(n.text)}}})
		} else {
			s.splitBlock(n)
		}
	}
	for _, c := range n.children {
		s.expand(c)
	}
}

// partLimit is the most a part of a split block may hold: it leaves room for
// the overlap.
func (s *splitter) partLimit() int { return max(s.cfg.MaxTokens-s.cfg.OverlapTokens, 1) }

// splitBlock cuts the own text of n into parts of about equal size at
// sentence boundaries (words, or runes, for sentences that are too long).
func (s *splitter) splitBlock(n *node) {
	limit := s.partLimit()
	parts := (n.tokens + limit - 1) / limit
	target := (n.tokens + parts - 1) / parts
	// Leave room in the first part for the headings right before the block,
	// so that they can share its chunk.
	room := limit
	for i := len(s.units) - 1; i >= 0 && s.units[i].heading > 0; i-- {
		room -= s.units[i].tokens
	}
	room = max(room, limit/2)
	text := n.text
	start, cur, k := 0, 0, 0
	emit := func(end int) {
		if t := strings.TrimSpace(text[start:end]); t != "" {
			u := unit{ids: []string{n.block.ID}, first: n.index, text: t,
				tokens: lang.EstimateTokens(t), leaf: n.block.ID, part: k,
				spans: []schemas.BlockSpan{{ID: n.block.ID, Start: 0, End: len(t)}}}
			if k == 0 {
				u.heading = n.heading()
			}
			s.units = append(s.units, u)
			k++
		}
		start, cur = end, 0
	}
	atoms(text, room, func(a, _, t int) {
		if cur > 0 && (cur+t > room || cur >= target) {
			emit(a)
			room = limit
		}
		cur += t
	})
	emit(len(text))
}

// pack groups units into chunks greedily, in document order.
func (s *splitter) pack() []span {
	var spans []span
	cur := span{}
	section := 0 // tokens since the last level 1-2 heading
	half := s.cfg.MinTokens / 2
	for i := range s.units {
		u := &s.units[i]
		if cur.hi > cur.lo {
			limit := s.limit(cur.lo, len(spans) == 0)
			brk := false
			switch {
			case u.sectionStart() && (cur.own >= half || section >= half):
				brk = true
			case cur.own+u.tokens > limit:
				brk = true
			case u.heading > 0:
				// Keep headings with the start of their content.
				run := s.headed(i)
				brk = cur.own+run > limit && run <= s.partLimit()
			}
			if brk {
				spans = append(spans, cur)
				cur = span{lo: i, hi: i}
			}
		}
		if u.sectionStart() {
			section = 0
		}
		cur.hi = i + 1
		cur.own += u.tokens
		section += u.tokens
	}
	return append(spans, cur)
}

// headed returns the tokens of the headings from unit i on and of the unit
// that follows them.
func (s *splitter) headed(i int) int {
	total := 0
	for ; i < len(s.units); i++ {
		total += s.units[i].tokens
		if s.units[i].heading == 0 {
			break
		}
	}
	return total
}

// limit is the most own tokens of a chunk that starts at unit lo: a chunk
// that will get an overlap leaves room for it (its first unit alone may still
// take up to MaxTokens; the overlap then shrinks).
func (s *splitter) limit(lo int, first bool) int {
	if first || s.units[lo].sectionStart() {
		return s.cfg.MaxTokens
	}
	return s.partLimit()
}

// rebalance lets the small last chunk of a section take units from the end
// of the chunk before it, as long as that chunk stays the larger of the two.
func (s *splitter) rebalance(spans []span) {
	for j := 1; j < len(spans); j++ {
		tail, prev := &spans[j], &spans[j-1]
		if s.units[tail.lo].sectionStart() {
			continue
		}
		if j+1 < len(spans) && !s.units[spans[j+1].lo].sectionStart() {
			continue
		}
		limit := s.partLimit()
		for tail.own < s.cfg.MinTokens && prev.hi-prev.lo > 1 {
			u := &s.units[prev.hi-1]
			if u.sectionStart() || tail.own+u.tokens > limit || tail.own+u.tokens > prev.own {
				break
			}
			prev.hi--
			prev.own -= u.tokens
			tail.lo--
			tail.own += u.tokens
		}
		// Do not leave a heading at the end of the previous chunk.
		if prev.hi-prev.lo > 1 {
			u := &s.units[prev.hi-1]
			if u.heading > 0 && !u.sectionStart() && tail.own+u.tokens <= limit {
				prev.hi--
				prev.own -= u.tokens
				tail.lo--
				tail.own += u.tokens
			}
		}
	}
}

// render turns spans into pieces: text with overlap, ids, refs, hashes.
func (s *splitter) render(spans []span) []Piece {
	base := s.doc.TitlePath
	if len(base) == 0 && s.doc.Title != "" {
		base = []string{s.doc.Title}
	}
	pieces := make([]Piece, 0, len(spans))
	var prev joined // the previous chunk's own text
	var prevLast *unit
	for k, sp := range spans {
		units := s.units[sp.lo:sp.hi]
		own := joinUnits(units)
		text, blockSpans := own.text, own.spans
		first := &units[0]
		if k > 0 && !first.sectionStart() {
			text, blockSpans = s.withOverlap(prev, prevLast, own, first, sp.own)
		}
		sum := sha256.Sum256([]byte(text))
		pieces = append(pieces, Piece{
			ID:          chunkID(s.doc.DocID, own.ids, units),
			Ordinal:     k,
			Text:        text,
			SectionPath: s.sectionPath(base, first),
			Lang:        lang.DetectLang(text),
			BlockIDs:    own.ids,
			BlockSpans:  blockSpans,
			Refs:        s.refs(own.ids),
			Tokens:      lang.EstimateTokens(text),
			Hash:        hex.EncodeToString(sum[:]),
		})
		prev, prevLast = own, &units[len(units)-1]
	}
	return pieces
}

// joined is a chunk's own text: its units' text, separated by blank lines,
// the spans of their blocks in it, and the ids of the blocks it covers.
type joined struct {
	text  string
	spans []schemas.BlockSpan
	ids   []string
}

// joinUnits joins units into a chunk's own text.
func joinUnits(units []unit) joined {
	texts := make([]string, len(units))
	var j joined
	seen := make(map[string]bool)
	at := 0
	for i := range units {
		u := &units[i]
		texts[i] = u.text
		if i > 0 {
			at += len("\n\n")
		}
		for _, b := range u.spans {
			j.spans = append(j.spans, schemas.BlockSpan{ID: b.ID, Start: at + b.Start, End: at + b.End})
		}
		at += len(u.text)
		for _, id := range u.ids {
			if !seen[id] {
				seen[id] = true
				j.ids = append(j.ids, id)
			}
		}
	}
	j.text = strings.Join(texts, "\n\n")
	return j
}

// withOverlap starts a chunk that continues a section (own, from first on,
// of ownTokens tokens) with the tail of the previous chunk's own text (prev,
// ending with prevLast): its text and block spans.
func (s *splitter) withOverlap(prev joined, prevLast *unit, own joined, first *unit, ownTokens int) (string, []schemas.BlockSpan) {
	tail := overlap(prev.text, min(s.cfg.OverlapTokens, s.cfg.MaxTokens-ownTokens))
	if tail == "" {
		return own.text, own.spans
	}
	sep := "\n\n"
	if first.leaf != "" && prevLast.leaf == first.leaf {
		sep = " " // the same block goes on
	}
	spans := append(clipSpans(prev.spans, len(prev.text)-len(tail)), shiftSpans(own.spans, len(tail)+len(sep))...)
	return tail + sep + own.text, spans
}

// chunkID is a chunk's id: the document id, ':' and 16 hex digits of the
// sha256 of the ids of the blocks it covers and the part numbers of the
// split blocks among its units.
func chunkID(docID string, ids []string, units []unit) string {
	var key strings.Builder
	key.WriteString(strings.Join(ids, ","))
	parts := 0
	for i := range units {
		if u := &units[i]; u.leaf != "" {
			if parts == 0 {
				key.WriteByte('|')
			} else {
				key.WriteByte(',')
			}
			key.WriteString(u.leaf + "#" + strconv.Itoa(u.part))
			parts++
		}
	}
	idSum := sha256.Sum256([]byte(key.String()))
	return docID + ":" + hex.EncodeToString(idSum[:8])
}

// sectionPath is the section path of a chunk whose first own unit is first:
// the title path base, then the headings in force there.
func (s *splitter) sectionPath(base []string, first *unit) []string {
	// A heading in the path is cut like a title (schemas.MaxTitleRunes):
	// every chunk below it repeats it; its block keeps the full text.
	heads := s.paths[first.first]
	if slices.ContainsFunc(heads, func(h string) bool { return schemas.BoundTitle(h) != h }) {
		heads = slices.Clone(heads)
		for i, h := range heads {
			heads[i] = schemas.BoundTitle(h)
		}
	}
	if len(base) > 0 && len(heads) > 0 && sameHeading(heads[0], base[len(base)-1]) {
		heads = heads[1:] // the title's own heading (a Markdown note's first "# Title")
	}
	path := make([]string, 0, len(base)+len(heads))
	return append(append(path, base...), heads...)
}

// clipSpans keeps what of spans lies at or after from, moved to start at 0
// (the overlap is the suffix of the previous chunk's own text from there).
func clipSpans(spans []schemas.BlockSpan, from int) []schemas.BlockSpan {
	var out []schemas.BlockSpan
	for _, b := range spans {
		if b.End <= from {
			continue
		}
		out = append(out, schemas.BlockSpan{ID: b.ID, Start: max(b.Start, from) - from, End: b.End - from})
	}
	return out
}

// shiftSpans moves spans by d bytes.
func shiftSpans(spans []schemas.BlockSpan, d int) []schemas.BlockSpan {
	out := make([]schemas.BlockSpan, len(spans))
	for i, b := range spans {
		out[i] = schemas.BlockSpan{ID: b.ID, Start: b.Start + d, End: b.End + d}
	}
	return out
}

// sameHeading tells whether two headings read the same (case and surrounding
// space aside).
func sameHeading(a, b string) bool {
	return strings.EqualFold(strings.TrimSpace(a), strings.TrimSpace(b))
}

func (s *splitter) refs(ids []string) []string {
	var out []string
	for _, id := range ids {
		if n := s.byID[id]; n != nil {
			out = append(out, n.block.Refs...)
		}
	}
	if len(out) == 0 {
		return nil
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// overlap returns a suffix of text of at most budget tokens: whole sentences
// from the end, and, when they make less than two thirds of the budget, the
// last words of the sentence before them.
func overlap(text string, budget int) string {
	if budget <= 0 || text == "" {
		return ""
	}
	var starts []int
	sentences(text, func(a, _ int) { starts = append(starts, a) })
	pos, sum := len(text), 0
	k := len(starts) - 1
	for ; k >= 0; k-- {
		t := lang.EstimateTokens(text[starts[k]:pos])
		if sum+t > budget {
			break
		}
		sum += t
		pos = starts[k]
	}
	if k >= 0 && sum*3 < budget*2 {
		sentence := text[starts[k]:pos]
		var words []int
		wordsOf(sentence, func(a, _ int) { words = append(words, a) })
		end := len(sentence)
		for w := len(words) - 1; w >= 0; w-- {
			t := lang.EstimateTokens(sentence[words[w]:end])
			if sum+t > budget {
				break
			}
			sum += t
			end = words[w]
			pos = starts[k] + end
		}
	}
	return strings.TrimSpace(text[pos:])
}

// atoms cuts text into consecutive ranges of at most limit tokens: sentences,
// the words of a sentence that is too long, the runes of a word that is too
// long. Ranges cover text; t is the estimate of text[a:b].
func atoms(text string, limit int, fn func(a, b, t int)) {
	sentences(text, func(a, b int) {
		if t := lang.EstimateTokens(text[a:b]); t <= limit {
			fn(a, b, t)
			return
		}
		wordsOf(text[a:b], func(wa, wb int) {
			wa, wb = wa+a, wb+a
			if t := lang.EstimateTokens(text[wa:wb]); t <= limit {
				fn(wa, wb, t)
				return
			}
			// No rune is worth more than one token, so limit runes fit.
			for wa < wb {
				end, n := wa, 0
				for end < wb && n < limit {
					_, size := utf8.DecodeRuneInString(text[end:])
					end += size
					n++
				}
				fn(wa, end, lang.EstimateTokens(text[wa:end]))
				wa = end
			}
		})
	})
}

// sentences calls fn with the range of each sentence of text, trailing space
// included. A sentence ends at '.', '!', '?' or '…' (and closing quotes or
// brackets) followed by space, or at a line break.
func sentences(text string, fn func(a, b int)) {
	start, i := 0, 0
	for i < len(text) {
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		end := r == '\n'
		if r == '.' || r == '!' || r == '?' || r == '…' {
			j := i
			for j < len(text) {
				c, size := utf8.DecodeRuneInString(text[j:])
				if !strings.ContainsRune(`)]"'»”’`, c) {
					break
				}
				j += size
			}
			if j < len(text) {
				if c, _ := utf8.DecodeRuneInString(text[j:]); unicode.IsSpace(c) {
					i, end = j, true
				}
			}
		}
		if end {
			for i < len(text) {
				c, size := utf8.DecodeRuneInString(text[i:])
				if !unicode.IsSpace(c) {
					break
				}
				i += size
			}
			fn(start, i)
			start = i
		}
	}
	if start < len(text) {
		fn(start, len(text))
	}
}

// wordsOf calls fn with the range of each word of text, trailing space included.
func wordsOf(text string, fn func(a, b int)) {
	start, space := 0, false
	for i, r := range text {
		isSpace := unicode.IsSpace(r)
		if space && !isSpace {
			fn(start, i)
			start = i
		}
		space = isSpace
	}
	if start < len(text) {
		fn(start, len(text))
	}
}
