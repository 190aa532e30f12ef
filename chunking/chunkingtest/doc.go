// Package chunkingtest builds documents (schemas.DocChanged) for the tests
// of the chunker (chunking) and of the chunk stage (workers/chunk). It
// imports schemas only.
package chunkingtest

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/exocortex/exocortex/schemas"
)

// DocBuilder writes DocChanged fixtures block by block.
type DocBuilder struct {
	// Doc is the document built so far.
	Doc schemas.DocChanged
	// Rng draws the words of Sentence and Text.
	Rng  *rand.Rand
	next int
}

// NewDoc starts a SiYuan document id whose Sentence and Text draw from seed.
func NewDoc(id string, seed uint64) *DocBuilder {
	return &DocBuilder{
		Doc: schemas.DocChanged{
			DocID: id, Source: schemas.SourceSiYuan, Path: "/notes/" + id,
			Notebook: "box1", Title: "Doc " + id, TitlePath: []string{"Notes", "Doc " + id},
			Hash: "hash-1", Version: 10,
		},
		Rng: rand.New(rand.NewPCG(seed, 42)),
	}
}

// Add appends a block and returns its id.
func (d *DocBuilder) Add(typ, parent string, level int, text string, refs ...string) string {
	d.next++
	id := fmt.Sprintf("%s-b%04d", d.Doc.DocID, d.next)
	d.Doc.Blocks = append(d.Doc.Blocks, schemas.Block{ID: id, Type: typ, ParentID: parent,
		Level: level, Text: text, Refs: refs, Updated: "20240101120000"})
	return id
}

// Heading appends a top-level heading.
func (d *DocBuilder) Heading(level int, text string) string {
	return d.Add(schemas.BlockHeading, "", level, text)
}

// Para appends a top-level paragraph.
func (d *DocBuilder) Para(text string, refs ...string) string {
	return d.Add(schemas.BlockParagraph, "", 0, text, refs...)
}

// Code appends a top-level code block.
func (d *DocBuilder) Code(text string) string { return d.Add(schemas.BlockCode, "", 0, text) }

// List adds list > list_item > paragraph for every item.
func (d *DocBuilder) List(items ...string) string {
	l := d.Add(schemas.BlockList, "", 0, "")
	for _, it := range items {
		li := d.Add(schemas.BlockListItem, l, 0, "")
		d.Add(schemas.BlockParagraph, li, 0, it)
	}
	return l
}

var (
	enWords = strings.Fields(`the a of to and in is that for it as with was on be by this are from
		note knowledge block search vector index answer question graph document section chunk
		retrieval embedding language model token stream worker pipeline retry message consumer
		server storage backup citation context reranker paragraph heading reference evaluation
		internationalization configuration performance reliability deterministic idempotency
		acknowledgement distributed architecture observability throughput latency`)
	ruWords = strings.Fields(`и в не на что с по как это из для к от так же все но о
		заметка знание блок поиск вектор индекс ответ вопрос граф документ раздел фрагмент
		извлечение язык модель токен поток обработчик очередь сообщение сервер хранилище
		копия цитата контекст заголовок ссылка оценка достопримечательность производительность
		надёжность детерминированный идемпотентность подтверждение распределённый архитектура
		наблюдаемость пропускная задержка конфигурация`)
)

// Sentence is a random English or Russian ("ru") sentence of 8-20 words.
func (d *DocBuilder) Sentence(lang string) string {
	words := enWords
	if lang == "ru" {
		words = ruWords
	}
	n := 8 + d.Rng.IntN(13)
	out := make([]string, n)
	for i := range out {
		out[i] = words[d.Rng.IntN(len(words))]
	}
	out[0] = strings.ToUpper(out[0][:1]) + out[0][1:]
	if lang == "ru" {
		r := []rune(out[0])
		out[0] = strings.ToUpper(string(r[0])) + string(r[1:])
	}
	if n > 10 {
		out[n/2] += ","
	}
	return strings.Join(out, " ") + "."
}

// Text is sentences random sentences of lang.
func (d *DocBuilder) Text(lang string, sentences int) string {
	out := make([]string, sentences)
	for i := range out {
		out[i] = d.Sentence(lang)
	}
	return strings.Join(out, " ")
}

// CodeText is lines lines of Go-like code.
func (d *DocBuilder) CodeText(lines int) string {
	out := make([]string, lines)
	for i := range out {
		out[i] = fmt.Sprintf("if err := stage%d.Handle(ctx, msg); err != nil { return fmt.Errorf(\"stage %d: %%w\", err) }", i, i)
	}
	return strings.Join(out, "\n")
}

// LongDoc is a document of the given number of level 2 sections, alternating
// English and Russian, with paragraphs, subsections, lists, code, refs, one
// oversize paragraph (section 4) and one oversize list (section 7).
func LongDoc(id string, sections int) *DocBuilder {
	d := NewDoc(id, 1)
	d.Heading(1, "Knowledge base handbook")
	d.Para(d.Text("en", 6))
	for s := range sections {
		lang := "en"
		title := fmt.Sprintf("Section %d", s)
		if s%2 == 1 {
			lang, title = "ru", fmt.Sprintf("Раздел %d", s)
		}
		d.Heading(2, title)
		for p := range 4 + d.Rng.IntN(3) {
			var refs []string
			if p == 1 {
				refs = []string{fmt.Sprintf("ref-%d-b", s), fmt.Sprintf("ref-%d-a", s)}
			}
			d.Para(d.Text(lang, 3+d.Rng.IntN(5)), refs...)
		}
		if s%3 == 1 {
			d.Heading(3, title+" details")
			d.Para(d.Text(lang, 4))
			d.Para(d.Text(lang, 3))
		}
		if s%4 == 2 {
			items := make([]string, 3+d.Rng.IntN(4))
			for i := range items {
				items[i] = d.Text(lang, 1+d.Rng.IntN(2))
			}
			d.List(items...)
		}
		if s%5 == 3 {
			d.Code(d.CodeText(8))
		}
		if s%12 == 4 {
			d.Para(d.Text(lang, 40))
		}
		if s%12 == 7 {
			items := make([]string, 25)
			for i := range items {
				items[i] = d.Text(lang, 1+d.Rng.IntN(2))
			}
			d.List(items...)
		}
	}
	return d
}
