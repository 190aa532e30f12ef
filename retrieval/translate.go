package retrieval

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
)

// Reasons of the cross-lingual search.
const (
	// ReasonTranslated: the question was also searched translated ("translated: en: <text>").
	ReasonTranslated = "translated"
	// ReasonNoTranslator: the notes are in another language and nothing can translate the question.
	ReasonNoTranslator = "translation_unavailable"
	// ReasonTranslationFailed: the translation call failed; the original search stands alone.
	ReasonTranslationFailed = "translation_failed"
)

// TranslatePrompt starts the system message of a translation request.
const TranslatePrompt = "Translate the question into"

// TranslateTimeout bounds the translation call.
const TranslateTimeout = 15 * time.Second

// MinLangShare is the share of the chunks a language needs for the question
// to be translated into it.
const MinLangShare = 0.05

// LangCounter is implemented by an Index that counts its chunks' languages
// (*store.Store).
type LangCounter interface {
	ChunkLangs(ctx context.Context) (map[string]int, error)
}

// MultilingualEmbedder is implemented by a query embedder that tells whether
// it places a question near passages of other languages.
type MultilingualEmbedder interface {
	Multilingual() bool
}

// multilingual tells whether e maps languages into one space: what it says,
// else its name (multilingual-e5, LaBSE, bge-m3, ...).
func multilingual(e QueryEmbedder) bool {
	if e == nil {
		return false
	}
	if m, ok := e.(MultilingualEmbedder); ok {
		return m.Multilingual()
	}
	n := strings.ToLower(e.Name())
	for _, s := range []string{"multilingual", "labse", "bge-m3", "xlm", "paraphrase-multi"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

var langNames = map[string]string{"ru": "Russian", "en": "English"}

func langName(l string) string {
	if n, ok := langNames[l]; ok {
		return n + " (" + l + ")"
	}
	return l
}

// Translator returns a Retriever.Translate that asks the router's strategic
// role, in one request, for the question in every target language. The
// system message starts with TranslatePrompt, the user message is the
// question; the reply has one line per language, "<lang>: <translation>".
// Lines of languages not asked for, and empty ones, are ignored.
func Translator(r *llm.Router) func(ctx context.Context, question string, to []string) (map[string]string, error) {
	return func(ctx context.Context, question string, to []string) (map[string]string, error) {
		if r == nil {
			return nil, errors.New("no language-model provider")
		}
		names := make([]string, len(to))
		for i, l := range to {
			names[i] = langName(l)
		}
		zero := 0.0
		msgs := []llm.Message{
			{Role: "system", Content: TranslatePrompt + " " + strings.Join(names, ", ") + ". Reply with one line per language, " +
				`"<lang>: <translation>" (for example "` + to[0] + `: ..."), and nothing else. Keep names, commands and ` +
				"terms as a user of that language would write them."},
			{Role: "user", Content: question},
		}
		ctx, cancel := context.WithTimeout(ctx, TranslateTimeout)
		defer cancel()
		res, err := r.Stream(ctx, llm.Request{Role: llm.RoleStrategic, Messages: msgs, Temperature: &zero,
			MaxTokens: 64 + 3*len(question)*len(to)}, func(string) error { return nil })
		if err != nil {
			return nil, err
		}
		out := ParseTranslations(res.Text, to)
		if len(out) == 0 {
			return nil, fmt.Errorf("the reply %.80q has no line \"<lang>: <translation>\" for %s", res.Text, strings.Join(to, ", "))
		}
		return out, nil
	}
}

// ParseTranslations reads "<lang>: <translation>" lines for the languages in
// to (a reply for a single language may also be the bare translation).
func ParseTranslations(reply string, to []string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(reply, "\n") {
		line = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "-*•"))
		lang, text, ok := strings.Cut(line, ":")
		lang = strings.ToLower(strings.Trim(strings.TrimSpace(lang), "*`\"'"))
		if !ok || !slices.Contains(to, lang) {
			continue
		}
		if t := strings.TrimSpace(strings.Trim(strings.TrimSpace(text), "\"«»“”")); t != "" {
			out[lang] = t
		}
	}
	if len(out) == 0 && len(to) == 1 {
		if t := strings.TrimSpace(strings.Trim(strings.TrimSpace(reply), "\"«»“”")); t != "" && !strings.Contains(t, "\n") {
			out[to[0]] = t
		}
	}
	return out
}

// noteLangs are the languages other than lang that hold at least
// MinLangShare of the chunks, most chunks first.
func (r *Retriever) noteLangs(ctx context.Context, lang string) ([]string, error) {
	lc, ok := r.Index.(LangCounter)
	if !ok {
		return nil, nil
	}
	counts, err := lc.ChunkLangs(ctx)
	if err != nil {
		return nil, err
	}
	total := 0
	for _, n := range counts {
		total += n
	}
	var out []string
	for l, n := range counts {
		if l != "" && l != lang && float64(n) >= MinLangShare*float64(total) {
			out = append(out, l)
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		if counts[a] != counts[b] {
			return counts[b] - counts[a]
		}
		return strings.Compare(a, b)
	})
	return out, nil
}

// crossLingual searches lexically with the question translated into the
// notes' other languages when the vectors cannot bridge languages (no
// vector search, or an embedder that is not multilingual). It returns the
// extra result lists; what it did is in out.Reasons.
func (r *Retriever) crossLingual(ctx context.Context, out *schemas.QueryRetrieved, mode string, cfg Config) ([][]store.Hit, error) {
	if out.Lang == "" || mode == schemas.ModeVector || (mode != schemas.ModeLexical && multilingual(r.Embedder)) {
		return nil, nil
	}
	targets, err := r.noteLangs(ctx, out.Lang)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", out.QueryID, err)
	}
	if len(targets) == 0 {
		return nil, nil
	}
	if out.Options.Lang != "" {
		if !slices.Contains(targets, out.Options.Lang) {
			return nil, nil // the client keeps the search to one language
		}
		targets = []string{out.Options.Lang}
	}
	if r.Translate == nil {
		out.Reasons = append(out.Reasons, fmt.Sprintf("%s: the question is in %s and notes are in %s, but no language-model provider can translate it (configure one, or install a multilingual embedding model)",
			ReasonNoTranslator, out.Lang, strings.Join(targets, ", ")))
		return nil, nil
	}
	t := time.Now()
	tr, err := r.Translate(ctx, out.Searched, targets)
	out.TimingsMS["translate"] = ms(time.Since(t))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		reason := ReasonTranslationFailed
		if errors.Is(err, llm.ErrNoProvider) {
			reason = ReasonNoTranslator
		}
		out.Reasons = append(out.Reasons, fmt.Sprintf("%s: the question is in %s and notes are in %s; translating it failed: %v; searched with the question as asked",
			reason, out.Lang, strings.Join(targets, ", "), err))
		return nil, nil
	}
	var lists [][]store.Hit
	for _, l := range targets {
		text, ok := tr[l]
		if !ok || text == out.Searched {
			continue
		}
		hits, err := r.Index.Search(ctx, text, store.SearchOptions{K: cfg.LexicalK, Lang: out.Options.Lang, SnippetTokens: -1})
		if err != nil {
			return nil, fmt.Errorf("query %s: lexical search of the %s translation: %w", out.QueryID, l, err)
		}
		lists = append(lists, hits)
		out.Reasons = append(out.Reasons, fmt.Sprintf("%s: %s: %s", ReasonTranslated, l, text))
	}
	return lists, nil
}
