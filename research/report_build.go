package research

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/schemas"
)

// pendingSentence is a report sentence with the blocks that support it,
// before the sources are numbered.
type pendingSentence struct {
	text   string
	blocks []string
	// sides: a disagreement sentence, each side with its own blocks (text
	// and blocks are then theirs, joined).
	sides []pendingSide
}

// pendingSide is one side of a disagreement sentence: lead (whose note,
// when) is not checked against the blocks, text is.
type pendingSide struct {
	lead, text string
	blocks     []string
	updated    string
	newer      bool
	fact       string // the report id of the fact it states
}

type pendingSection struct {
	title     string
	sentences []pendingSentence
}

// builder assembles a report: verified sentences, then numbered sources and
// the Markdown.
type builder struct {
	a      *analysis.Analyzer
	blocks map[string]schemas.Context // block id -> a context holding that block alone
	lang   string
	rep    *schemas.ResearchReport

	summary, disagreements, conclusion []pendingSentence
	sections                           []pendingSection
	facts                              []schemas.Fact
	// conflicts are the pairs of verified facts that say otherwise.
	conflicts []conflict
	quotes    map[string]string // block id -> the evidence first quoted from it
	kept      int               // sentences kept that cite blocks
}

func (b *builder) reset() {
	b.summary, b.disagreements, b.conclusion, b.sections, b.kept = nil, nil, nil, nil, 0
	b.rep.Title = ""
}

// withMarker puts "[1, 2]" before the sentence's closing punctuation.
func withMarker(text string, n int) string {
	labels := make([]string, n)
	for i := range labels {
		labels[i] = strconv.Itoa(i + 1)
	}
	m := " [" + strings.Join(labels, ", ") + "]"
	text = strings.TrimSpace(text)
	end := len(text)
	for end > 0 {
		r, size := utf8.DecodeLastRuneInString(text[:end])
		if !strings.ContainsRune(".!?…", r) {
			break
		}
		end -= size
	}
	return text[:end] + m + text[end:]
}

// contexts are the contexts of the given blocks that the builder knows.
func (b *builder) contexts(blockIDs []string) []schemas.Context {
	var ctxs []schemas.Context
	for _, id := range blockIDs {
		if c, ok := b.blocks[id]; ok {
			ctxs = append(ctxs, c)
		}
	}
	return ctxs
}

// verify checks one sentence against the given blocks with the answer
// stage's verifier and its claim checks (answer.VerifyWith: the sentence's
// numbers, dates, times, ratios, names, limiting words and clauses must be
// stated by the block it cites): ok when it states something and every part
// of it is supported by one of the blocks; supported are the blocks that
// hold its support. claim is false for a sentence with no content words.
// reason says why it is not supported, with what the block lacks when the
// claim checks know it: "not_stated (time \"02:03\" is not in the block)".
func (b *builder) verify(text string, blockIDs []string) (supported []string, claim bool, reason string) {
	supported, claim, reason = b.verifyIn(text, b.contexts(blockIDs))
	if reason != "" && len(blockIDs) > 0 && len(b.contexts(blockIDs)) == 0 {
		reason = "no_block_text"
	}
	return supported, claim, reason
}

// verifyIn is verify against the given contexts.
func (b *builder) verifyIn(text string, ctxs []schemas.Context) (supported []string, claim bool, reason string) {
	probe := text
	if len(ctxs) > 0 {
		probe = withMarker(text, len(ctxs))
	}
	v := answer.VerifyWith(b.a, probe, ctxs, answer.Options{})
	if v.Claims == 0 {
		return nil, false, ""
	}
	if len(v.Unsupported) > 0 || v.Supported == 0 {
		reason = answer.DropUncited
		if len(v.Unsupported) > 0 {
			reason = v.Unsupported[0].Reason
		}
		for _, d := range v.Dropped {
			if d.Detail != "" {
				reason += " (" + d.Detail + ")"
				break
			}
		}
		return nil, true, reason
	}
	if b.quotes == nil {
		b.quotes = map[string]string{}
	}
	for _, c := range v.Citations {
		supported = append(supported, c.BlockID)
		if _, ok := b.quotes[c.BlockID]; !ok {
			b.quotes[c.BlockID] = c.Quote
		}
	}
	return supported, true, ""
}

// neighbours are the blocks the builder knows that share a document with
// one of the given blocks, those of the same chunk first: where a sentence
// that cites the block next to the one that states it is re-cited.
func (b *builder) neighbours(blockIDs []string) []string {
	chunks, docs := map[string]bool{}, map[string]bool{}
	for _, id := range blockIDs {
		if c, ok := b.blocks[id]; ok {
			if c.ChunkID != "" {
				chunks[c.ChunkID] = true
			}
			if c.DocID != "" {
				docs[c.DocID] = true
			}
		}
	}
	var same, other []string
	for id, c := range b.blocks {
		if slices.Contains(blockIDs, id) {
			continue
		}
		switch {
		case c.ChunkID != "" && chunks[c.ChunkID]:
			same = append(same, id)
		case c.DocID != "" && docs[c.DocID]:
			other = append(other, id)
		}
	}
	slices.Sort(same)
	slices.Sort(other)
	return append(same, other...)
}

// verifyFacts keeps the facts their blocks support (each with those
// blocks only); the others are named in the reasons.
func (b *builder) verifyFacts(facts []numberedFact) []numberedFact {
	var out []numberedFact
	for _, nf := range facts {
		blocks, claim, why := b.verify(nf.Fact.Text, nf.Fact.BlockIDs)
		if !claim || len(blocks) == 0 {
			if why == "" {
				why = answer.DropUnsupported
			}
			b.rep.Reasons = append(b.rep.Reasons, fmt.Sprintf("unsupported_fact: %s: %q", why, nf.Fact.Text))
			continue
		}
		nf.Fact.BlockIDs = blocks
		out = append(out, nf)
	}
	return out
}

// sentence verifies a sentence of the model's report against the blocks of
// the facts it cites; a sentence that states something and is not
// supported is dropped and named in the reasons.
func (b *builder) sentence(s replySentence, byID map[string]numberedFact) (pendingSentence, bool) {
	text, ids := cleanSentence(s)
	if text == "" {
		return pendingSentence{}, false
	}
	var blocks []string
	for _, id := range ids {
		nf, ok := byID[id]
		if !ok {
			continue
		}
		for _, bl := range nf.Fact.BlockIDs {
			if !slices.Contains(blocks, bl) {
				blocks = append(blocks, bl)
			}
		}
	}
	supported, claim, why := b.verify(text, blocks)
	if !claim {
		return pendingSentence{text: text}, true
	}
	if len(supported) == 0 && len(blocks) > 0 {
		// A sentence that cites the block next to the one that states it
		// is re-cited there, as answers are within a chunk.
		for _, n := range b.neighbours(blocks) {
			if got, _, _ := b.verify(text, []string{n}); len(got) > 0 {
				b.rep.Reasons = append(b.rep.Reasons, fmt.Sprintf("recited_sentence: %s -> %s: %q", strings.Join(blocks, ","), n, text))
				supported = got
				break
			}
		}
	}
	if len(supported) == 0 {
		if len(ids) == 0 {
			why = answer.DropUncited
		}
		b.rep.Reasons = append(b.rep.Reasons, fmt.Sprintf("unsupported_sentence: %s: %q", why, text))
		return pendingSentence{}, false
	}
	b.kept++
	return pendingSentence{text: text, blocks: supported}, true
}

func (b *builder) sentences(list []replySentence, byID map[string]numberedFact) []pendingSentence {
	var out []pendingSentence
	for _, s := range list {
		if p, ok := b.sentence(s, byID); ok {
			out = append(out, p)
		}
	}
	return out
}

// synthesis takes the model's report, sentence by sentence.
func (b *builder) synthesis(reply reportReply, facts []numberedFact) {
	byID := map[string]numberedFact{}
	for _, nf := range facts {
		byID[nf.ID] = nf
	}
	b.rep.Title = oneLine(reply.Title)
	b.summary = b.sentences(reply.Summary, byID)
	for _, sec := range reply.Sections {
		ss := b.sentences(sec.Sentences, byID)
		if cites(ss) {
			b.sections = append(b.sections, pendingSection{title: oneLine(sec.Title), sentences: ss})
		}
	}
	b.disagreementSection(reply.Disagreements, byID)
	b.conclusion = b.sentences(reply.Conclusion, byID)
	b.setFacts(facts)
}

// cites tells whether any of the sentences cites a block (a section of
// connecting words only is not kept).
func cites(ss []pendingSentence) bool {
	for _, s := range ss {
		if len(s.blocks) > 0 {
			return true
		}
	}
	return false
}

func (b *builder) setFacts(facts []numberedFact) {
	b.facts = b.facts[:0]
	for _, nf := range facts {
		f := nf.Fact
		f.ID = nf.ID
		b.facts = append(b.facts, f)
	}
}

// factsReport is the report without the model's synthesis: the verified
// facts by sub-question, each citing its blocks; the summary is the first
// fact of each sub-question with the most certainty.
func (b *builder) factsReport(d *schemas.ResearchDraft, facts []numberedFact) {
	if b.rep.Title == "" {
		b.rep.Title = fmt.Sprintf(reportText(b.lang, "title"), oneLine(d.Question))
	}
	for i, f := range d.Findings {
		var sec pendingSection
		sec.title = oneLine(f.Question)
		var best *pendingSentence
		bestRank := 9
		for _, nf := range facts {
			if nf.Task != i {
				continue
			}
			p := pendingSentence{text: oneLine(nf.Fact.Text), blocks: nf.Fact.BlockIDs}
			sec.sentences = append(sec.sentences, p)
			if r := certaintyRank(nf.Fact.Certainty); r < bestRank {
				best, bestRank = &sec.sentences[len(sec.sentences)-1], r
			}
		}
		if len(sec.sentences) == 0 {
			continue
		}
		if len(b.summary) < 4 && best != nil {
			b.summary = append(b.summary, *best)
		}
		b.sections = append(b.sections, sec)
	}
	b.disagreements = nil
	b.addConflicts(nil)
	b.setFacts(facts)
}

func certaintyRank(c string) int {
	switch c {
	case schemas.CertaintyHigh:
		return 0
	case schemas.CertaintyMedium:
		return 1
	case schemas.CertaintyLow:
		return 2
	}
	return 3
}

// citation is what the report says about a block: from the index, else
// from a fact's citation of it.
func (b *builder) citation(block string, facts ...schemas.Fact) schemas.Citation {
	c := schemas.Citation{BlockID: block}
	if ctx, ok := b.blocks[block]; ok {
		c.ChunkID, c.DocID, c.Title, c.SectionPath, c.Updated = ctx.ChunkID, ctx.DocID, ctx.Title, ctx.SectionPath, ctx.Updated
		c.Link = BlockLink(block, ctx.Path, ctx.Title, ctx.SectionPath)
	}
	all := facts
	if len(all) == 0 {
		all = b.facts
	}
	for _, f := range all {
		for _, fc := range f.Citations {
			if fc.BlockID != block {
				continue
			}
			if c.Title == "" {
				c.Title = fc.Title
			}
			if len(c.SectionPath) == 0 {
				c.SectionPath = fc.SectionPath
			}
			if c.Link == "" {
				c.Link = fc.Link
			}
			if c.DocID == "" {
				c.DocID, c.ChunkID = fc.DocID, fc.ChunkID
			}
			if c.Quote == "" {
				c.Quote = fc.Quote
			}
			if c.Updated == "" {
				c.Updated = fc.Updated
			}
		}
	}
	if c.Updated == "" {
		c.Updated = factDate(block, all)
	}
	if c.Link == "" {
		c.Link = answer.Link(block, "")
	}
	if _, ok := b.blocks[block]; !ok {
		if p := linkPath(c.Link); p != "" {
			// A fact's citation links the file; the report links the
			// block's heading.
			c.Link = BlockLink(block, p, c.Title, c.SectionPath)
		}
	}
	return c
}

// finish numbers the sources in order of first use, fills the structured
// report and renders its Markdown.
func (b *builder) finish(now time.Time) *schemas.ResearchReport {
	rep := b.rep
	number := map[string]int{}
	source := func(bl string) int {
		n, ok := number[bl]
		if !ok {
			c := b.citation(bl)
			if q, ok := b.quotes[bl]; ok && q != "" {
				c.Quote = q
			}
			n = len(rep.Sources) + 1
			c.Number = n
			number[bl] = n
			rep.Sources = append(rep.Sources, c)
		}
		return n
	}
	convert := func(ps []pendingSentence) []schemas.ReportSentence {
		var out []schemas.ReportSentence
		for _, p := range ps {
			s := schemas.ReportSentence{Text: p.text}
			for _, bl := range p.blocks {
				if n := source(bl); !slices.Contains(s.Sources, n) {
					s.Sources = append(s.Sources, n)
				}
			}
			var parts []string
			for _, sd := range p.sides {
				side := schemas.ReportSide{Lead: sd.lead, Text: sd.text, Updated: sd.updated, Newer: sd.newer}
				for _, bl := range sd.blocks {
					n := source(bl)
					if !slices.Contains(side.Sources, n) {
						side.Sources = append(side.Sources, n)
					}
					if !slices.Contains(s.Sources, n) {
						s.Sources = append(s.Sources, n)
					}
				}
				parts = append(parts, strings.TrimSpace(sd.lead+" "+sd.text))
				s.Sides = append(s.Sides, side)
			}
			if len(p.sides) > 0 {
				s.Text = strings.Join(parts, " ")
			}
			out = append(out, s)
		}
		return out
	}
	rep.Summary = convert(b.summary)
	rep.Sections = nil
	for _, sec := range b.sections {
		rep.Sections = append(rep.Sections, schemas.ReportSection{Title: sec.title, Sentences: convert(sec.sentences)})
	}
	rep.Disagreements = convert(b.disagreements)
	rep.Conclusion = convert(b.conclusion)
	if rep.Title == "" {
		rep.Title = fmt.Sprintf(reportText(b.lang, "title"), oneLine(rep.Question))
	}
	rep.Facts = b.facts
	rep.Finished = now.UTC()
	rep.Markdown = RenderMarkdown(rep)
	return rep
}

// factDate is the note time of a fact that cites block and rests on one
// document only (its Updated is then that document's time), "" when none
// does: a source's date when the index did not give it.
func factDate(block string, facts []schemas.Fact) string {
	for _, f := range facts {
		if f.Updated == "" || !slices.Contains(f.BlockIDs, block) {
			continue
		}
		doc, one := "", true
		for _, fc := range f.Citations {
			if doc != "" && fc.DocID != "" && fc.DocID != doc {
				one = false
			}
			doc = cmp.Or(doc, fc.DocID)
		}
		if one {
			return f.Updated
		}
	}
	return ""
}
