// Package eval runs golden sets against the retriever and reports Recall@k,
// MRR and latency. It reads SQuAD-format files (v1.1 and v2.0) directly and
// JSONL golden sets (question, lang, gold ids, answers).
package eval

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/exocortex/exocortex/lang"
	"github.com/exocortex/exocortex/notes"
	"github.com/exocortex/exocortex/schemas"
)

// Question is one golden question. Gold holds document or block ids; a hit
// counts when its document or any of its blocks is in Gold.
type Question struct {
	ID       string   `json:"id"`
	Question string   `json:"question"`
	Lang     string   `json:"lang,omitempty"`
	Gold     []string `json:"gold"`
	Answers  []string `json:"answers,omitempty"`
	// Unanswerable marks questions whose answer is not in the notes: SQuAD
	// v2.0 questions with no answer, and JSONL questions with "answers": []
	// (set by ParseJSONL).
	Unanswerable bool `json:"unanswerable,omitempty"`
	// Translations holds the question in other languages (lang -> text),
	// for a scripted provider's translation table.
	Translations map[string]string `json:"translations,omitempty"`
	// Kind is what the answer is: KindNumber, or empty for any other answer.
	Kind string `json:"kind,omitempty"`
}

// KindNumber marks a question whose answer is a number, a date, a time, a
// quantity with its unit, a money amount, a version or a limit ("How many
// days...", "Which port...").
const KindNumber = "number"

// Set is a named golden set and, for SQuAD files, the documents it needs.
type Set struct {
	Name      string
	Docs      []*schemas.DocChanged
	Questions []Question
	// Notes are the folders a JSONL set's gold block ids point into, from
	// its "# notes: PATH" lines (PATH relative to the set's file), indexed
	// with the set.
	Notes []string
}

// Load reads a SQuAD JSON file or a JSONL golden set, by content. A JSONL
// set's notes folders and the Markdown files its gold ids name are taken
// relative to the set's file (see markdownGold).
func Load(path string) (*Set, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read golden set: %w", err)
	}
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	trimmed := bytes.TrimSpace(raw)
	if bytes.HasPrefix(trimmed, []byte("{")) && bytes.Contains(trimmed[:min(len(trimmed), 4096)], []byte(`"data"`)) {
		set, err := ParseSQuAD(raw, name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return set, nil
	}
	set, err := ParseJSONL(raw, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i, n := range set.Notes {
		if !filepath.IsAbs(n) {
			set.Notes[i] = filepath.Join(filepath.Dir(path), n)
		}
	}
	for i := range set.Questions {
		gold := set.Questions[i].Gold
		for j, g := range gold {
			gold[j] = markdownGold(filepath.Dir(path), g)
		}
	}
	return set, nil
}

// markdownGold turns a gold id that names a Markdown file, "FILE.md" or
// "FILE.md#HASH" (FILE relative to dir, the set's folder), into the id the
// files source gives that document or block: MarkdownDocID of the file,
// then "#" and HASH. Markdown ids depend on the file's absolute path, so a
// set names them by path; any other id is returned as it is.
func markdownGold(dir, g string) string {
	file, hash, hasHash := strings.Cut(g, "#")
	switch strings.ToLower(filepath.Ext(file)) {
	case ".md", ".markdown":
	default:
		return g
	}
	p := filepath.FromSlash(file)
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	id := notes.MarkdownDocID(p)
	if hasHash {
		id += "#" + hash
	}
	return id
}

type squadFile struct {
	Version string `json:"version"`
	Data    []struct {
		Title      string `json:"title"`
		Paragraphs []struct {
			Context string `json:"context"`
			QAs     []struct {
				ID           string `json:"id"`
				Question     string `json:"question"`
				IsImpossible bool   `json:"is_impossible"`
				Answers      []struct {
					Text string `json:"text"`
				} `json:"answers"`
			} `json:"qas"`
		} `json:"paragraphs"`
	} `json:"data"`
}

// ParseSQuAD imports a SQuAD v1.1 or v2.0 file: each paragraph becomes one
// document (gold of its questions); answers may be empty (v2.0).
func ParseSQuAD(raw []byte, name string) (*Set, error) {
	var f squadFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("parse SQuAD json: %w", err)
	}
	if len(f.Data) == 0 {
		return nil, fmt.Errorf("SQuAD file has no data")
	}
	set := &Set{Name: name}
	version := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	for ai, art := range f.Data {
		title := strings.ReplaceAll(art.Title, "_", " ")
		for pi, p := range art.Paragraphs {
			text := strings.TrimSpace(strings.ReplaceAll(p.Context, "\ufeff", ""))
			if text == "" {
				continue
			}
			sum := sha256.Sum256([]byte(art.Title + "\x00" + text))
			h := hex.EncodeToString(sum[:])
			docID := "squad-" + h[:16]
			set.Docs = append(set.Docs, &schemas.DocChanged{
				DocID:     docID,
				Source:    "squad",
				Path:      fmt.Sprintf("%s/%s/%d", name, art.Title, pi),
				Notebook:  name,
				Title:     title,
				TitlePath: []string{title},
				Hash:      h,
				Version:   version,
				Meta:      map[string]string{"article": fmt.Sprint(ai), "paragraph": fmt.Sprint(pi)},
				Blocks:    []schemas.Block{{ID: docID + "-p", Type: schemas.BlockParagraph, Text: text}},
			})
			for _, qa := range p.QAs {
				q := Question{ID: qa.ID, Question: qa.Question, Lang: lang.DetectLang(qa.Question), Gold: []string{docID},
					Unanswerable: qa.IsImpossible || len(qa.Answers) == 0}
				for _, a := range qa.Answers {
					q.Answers = append(q.Answers, a.Text)
				}
				set.Questions = append(set.Questions, q)
			}
		}
	}
	return set, nil
}

// ParseJSONL reads one Question per line; blank lines and lines starting
// with # are skipped, except "# notes: PATH", which names a folder of notes
// the gold ids point into (Set.Notes). A question with "answers": [] is
// unanswerable: its answer is not in the notes. "kind" is empty or
// KindNumber. Gold ids are kept as written (Load resolves Markdown paths).
func ParseJSONL(raw []byte, name string) (*Set, error) {
	set := &Set{Name: name}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(text, "# notes:"); ok {
			if n := strings.TrimSpace(rest); n != "" {
				set.Notes = append(set.Notes, n)
			}
			continue
		}
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		var q Question
		if err := json.Unmarshal([]byte(text), &q); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if q.Question == "" {
			return nil, fmt.Errorf("line %d: question is empty", line)
		}
		if q.Kind != "" && q.Kind != KindNumber {
			return nil, fmt.Errorf("line %d: kind %q is unknown: write %q or leave kind out", line, q.Kind, KindNumber)
		}
		if q.Lang == "" {
			q.Lang = lang.DetectLang(q.Question)
		}
		if q.ID == "" {
			q.ID = fmt.Sprintf("%s:%d", name, line)
		}
		if q.Answers != nil && len(q.Answers) == 0 {
			q.Unanswerable = true
		}
		set.Questions = append(set.Questions, q)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(set.Questions) == 0 {
		return nil, fmt.Errorf("golden set has no questions")
	}
	return set, nil
}

// Parts of a golden set: questions are split by the document they are about,
// about a third into dev (for tuning) and the rest into test (for reporting),
// so that tuning never sees a test question's paragraph or article.
const (
	PartAll  = "all"
	PartDev  = "dev"
	PartTest = "test"
)

// Split keeps the questions of one part of the set ("all" keeps every
// question). A SQuAD question belongs to the part of its article (by title,
// so the Russian and English XQuAD split alike); a question without a known
// document title, by its first gold id.
func Split(s *Set, part string) (*Set, error) {
	switch part {
	case "", PartAll:
		return s, nil
	case PartDev, PartTest:
	default:
		return nil, fmt.Errorf("unknown part %q (want all, dev or test)", part)
	}
	titles := map[string]string{}
	for _, d := range s.Docs {
		titles[d.DocID] = d.Title
	}
	out := &Set{Name: s.Name + "." + part, Docs: s.Docs}
	for _, q := range s.Questions {
		key := q.ID
		if len(q.Gold) > 0 {
			key = q.Gold[0]
			if t, ok := titles[key]; ok && t != "" {
				key = t
			}
		}
		h := fnv.New32a()
		h.Write([]byte(key))
		if dev := h.Sum32()%3 == 0; dev == (part == PartDev) {
			out.Questions = append(out.Questions, q)
		}
	}
	return out, nil
}
