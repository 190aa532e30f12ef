package tokenizer

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// ErrUnsupported is wrapped by the errors for components of tokenizer.json
// that this package does not implement (a BPE model, a ByteLevel
// pre-tokenizer, ...). The error names the type and where it is.
var ErrUnsupported = errors.New("unsupported")

// fileJSON is the top level of tokenizer.json.
type fileJSON struct {
	AddedTokens   []addedTokenJSON `json:"added_tokens"`
	Normalizer    json.RawMessage  `json:"normalizer"`
	PreTokenizer  json.RawMessage  `json:"pre_tokenizer"`
	PostProcessor json.RawMessage  `json:"post_processor"`
	Model         json.RawMessage  `json:"model"`
	Padding       *paddingJSON     `json:"padding"`
}

type addedTokenJSON struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

type paddingJSON struct {
	Direction     string `json:"direction"`
	PadToMultiple *int   `json:"pad_to_multiple_of"`
	PadID         int64  `json:"pad_id"`
	PadTypeID     int64  `json:"pad_type_id"`
	PadToken      string `json:"pad_token"`
}

// patternJSON is {"String": "..."} or {"Regex": "..."}.
type patternJSON struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// typeOf reads the "type" field of a component.
func typeOf(raw json.RawMessage, path string) (string, error) {
	var v struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return v.Type, nil
}

// decode unmarshals a component's fields, naming its path on failure.
func decode(raw json.RawMessage, path string, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func unsupported(path, what, typ string) error {
	return fmt.Errorf("%s: %w %s type %q", path, ErrUnsupported, what, typ)
}

func parse(data []byte) (*Tokenizer, error) {
	var f fileJSON
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("parse tokenizer.json: %w", err)
	}
	if isNull(f.Model) {
		return nil, errors.New("model: missing")
	}
	t := &Tokenizer{}
	var err error
	if t.model, err = parseModel(f.Model, "model"); err != nil {
		return nil, err
	}
	if !isNull(f.Normalizer) {
		if t.normalizer, err = parseNormalizer(f.Normalizer, "normalizer"); err != nil {
			return nil, err
		}
	}
	if !isNull(f.PreTokenizer) {
		if t.preTok, err = parsePreTokenizer(f.PreTokenizer, "pre_tokenizer"); err != nil {
			return nil, err
		}
	}
	if !isNull(f.PostProcessor) {
		if t.processor, err = parseProcessor(f.PostProcessor, "post_processor"); err != nil {
			return nil, err
		}
	}
	if err := t.setAdded(f.AddedTokens); err != nil {
		return nil, err
	}
	t.setPadding(f.Padding)
	return t, nil
}

func (t *Tokenizer) setAdded(list []addedTokenJSON) error {
	t.addedID = make(map[string]int, len(list))
	var rawPats, normPats []string
	var rawToks, normToks []*addedToken
	for i, a := range list {
		if a.Content == "" {
			return fmt.Errorf("added_tokens[%d]: empty content", i)
		}
		tok := &addedToken{
			id: a.ID, content: a.Content, singleWord: a.SingleWord, lstrip: a.LStrip,
			rstrip: a.RStrip, normalized: a.Normalized, special: a.Special,
		}
		t.added = append(t.added, tok)
		t.addedID[a.Content] = a.ID
		if !a.Normalized {
			rawPats, rawToks = append(rawPats, a.Content), append(rawToks, tok)
			continue
		}
		// Normalized tokens are looked for in normalized text, so their
		// content is normalized too.
		n := newNormalized(a.Content, 0)
		if t.normalizer != nil {
			t.normalizer.normalize(n)
		}
		if n.s != "" {
			normPats, normToks = append(normPats, n.s), append(normToks, tok)
		}
	}
	t.raw = newMatcher(rawPats, rawToks)
	t.norm = newMatcher(normPats, normToks)

	// Distinct tokens: the model's pieces and the added ones not among them.
	seen := 0
	for _, p := range t.model.vocab() {
		if p != "" {
			seen++
		}
	}
	counted := make(map[string]bool)
	for _, a := range t.added {
		if _, ok := t.model.tokenID(a.content); !ok && !counted[a.content] {
			counted[a.content] = true
			seen++
		}
	}
	t.vocabSize = seen
	return nil
}

// setPadding takes the file's padding section, or else the model's pad
// token ("<pad>" or "[PAD]"), or else id 0.
func (t *Tokenizer) setPadding(p *paddingJSON) {
	if p != nil {
		t.pad = padding{id: p.PadID, typeID: p.PadTypeID, token: p.PadToken, left: p.Direction == "Left"}
		if p.PadToMultiple != nil {
			t.pad.multiple = *p.PadToMultiple
		}
		return
	}
	for _, tok := range []string{"<pad>", "[PAD]"} {
		if id, ok := t.TokenID(tok); ok {
			t.pad = padding{id: id, token: tok}
			return
		}
	}
	t.pad = padding{}
}

// ---- models ----

// modelJSON holds the fields of the models this package reads; the vocab
// is decoded once the type is known.
type modelJSON struct {
	Type         string          `json:"type"`
	Vocab        json.RawMessage `json:"vocab"`
	UnkID        *int            `json:"unk_id"`
	ByteFallback bool            `json:"byte_fallback"`
	UnkToken     *string         `json:"unk_token"`
	Prefix       *string         `json:"continuing_subword_prefix"`
	MaxChars     *int            `json:"max_input_chars_per_word"`
	Merges       json.RawMessage `json:"merges"`
}

func parseModel(raw json.RawMessage, path string) (model, error) {
	var m modelJSON
	if err := decode(raw, path, &m); err != nil {
		return nil, err
	}
	typ := m.Type
	if typ == "" {
		// Old files have no "type": a list vocab is Unigram, a map with
		// merges BPE, one with WordPiece settings WordPiece.
		v := bytes.TrimSpace(m.Vocab)
		switch {
		case len(v) > 0 && v[0] == '[':
			typ = "Unigram"
		case m.Merges != nil:
			typ = "BPE"
		case m.Prefix != nil || m.MaxChars != nil:
			typ = "WordPiece"
		}
	}
	switch typ {
	case "Unigram":
		var vocab []scoredPiece
		if err := decode(m.Vocab, path+".vocab", &vocab); err != nil {
			return nil, err
		}
		unk := -1
		if m.UnkID != nil {
			unk = *m.UnkID
		}
		u, err := newUnigram(vocab, unk, m.ByteFallback)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return u, nil
	case "WordPiece":
		var vocab map[string]int
		if err := decode(m.Vocab, path+".vocab", &vocab); err != nil {
			return nil, err
		}
		unk, prefix, maxChars := "[UNK]", "##", 100
		if m.UnkToken != nil {
			unk = *m.UnkToken
		}
		if m.Prefix != nil {
			prefix = *m.Prefix
		}
		if m.MaxChars != nil {
			maxChars = *m.MaxChars
		}
		w, err := newWordPiece(vocab, unk, prefix, maxChars)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return w, nil
	}
	return nil, unsupported(path+".type", "model", typ)
}

// UnmarshalJSON reads a Unigram vocab entry ["piece", score].
func (p *scoredPiece) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	comma := bytes.LastIndexByte(b, ',')
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' || comma < 0 {
		return fmt.Errorf("vocab entry %.40s: want [piece, score]", b)
	}
	str := bytes.TrimSpace(b[1:comma])
	if len(str) >= 2 && str[0] == '"' && str[len(str)-1] == '"' &&
		bytes.IndexByte(str, '\\') < 0 && utf8.Valid(str) {
		p.piece = string(str[1 : len(str)-1])
	} else if err := json.Unmarshal(str, &p.piece); err != nil {
		return fmt.Errorf("vocab entry %.40s: %w", b, err)
	}
	score, err := strconv.ParseFloat(string(bytes.TrimSpace(b[comma+1:len(b)-1])), 64)
	if err != nil {
		return fmt.Errorf("vocab entry %.40s: %w", b, err)
	}
	p.score = score
	return nil
}

// ---- normalizers ----

func parseNormalizer(raw json.RawMessage, path string) (normalizer, error) {
	typ, err := typeOf(raw, path)
	if err != nil {
		return nil, err
	}
	switch typ {
	case "Sequence":
		return parseNormalizerSeq(raw, path)
	case "Precompiled":
		return parsePrecompiled(raw, path)
	case "Replace":
		var v struct {
			Pattern patternJSON `json:"pattern"`
			Content string      `json:"content"`
		}
		if err := decode(raw, path, &v); err != nil {
			return nil, err
		}
		pat, err := parsePattern(v.Pattern, path+".pattern")
		if err != nil {
			return nil, err
		}
		return replaceNormalizer{pat, v.Content}, nil
	case "NFC":
		return unicodeForm{norm.NFC}, nil
	case "NFD":
		return unicodeForm{norm.NFD}, nil
	case "NFKC":
		return unicodeForm{norm.NFKC}, nil
	case "NFKD":
		return unicodeForm{norm.NFKD}, nil
	case "Lowercase":
		return lowercase{}, nil
	case "Strip":
		v := struct {
			Left  bool `json:"strip_left"`
			Right bool `json:"strip_right"`
		}{true, true}
		if err := decode(raw, path, &v); err != nil {
			return nil, err
		}
		return strip{v.Left, v.Right}, nil
	case "StripAccents":
		return stripAccents{}, nil
	case "Prepend":
		var v struct {
			Prepend string `json:"prepend"`
		}
		if err := decode(raw, path, &v); err != nil {
			return nil, err
		}
		return prependNormalizer{v.Prepend}, nil
	case "BertNormalizer":
		return parseBertNormalizer(raw, path)
	}
	return nil, unsupported(path+".type", "normalizer", typ)
}

// parseNormalizerSeq parses a Sequence normalizer: its normalizers in order.
func parseNormalizerSeq(raw json.RawMessage, path string) (normalizer, error) {
	var v struct {
		Normalizers []json.RawMessage `json:"normalizers"`
	}
	if err := decode(raw, path, &v); err != nil {
		return nil, err
	}
	var seq normalizerSeq
	for i, r := range v.Normalizers {
		n, err := parseNormalizer(r, fmt.Sprintf("%s.normalizers[%d]", path, i))
		if err != nil {
			return nil, err
		}
		seq = append(seq, n)
	}
	return seq, nil
}

// parsePrecompiled parses a Precompiled normalizer: SentencePiece's
// character map, base64 in the JSON.
func parsePrecompiled(raw json.RawMessage, path string) (normalizer, error) {
	var v struct {
		Charsmap *string `json:"precompiled_charsmap"`
	}
	if err := decode(raw, path, &v); err != nil {
		return nil, err
	}
	var blob []byte
	if v.Charsmap != nil {
		var err error
		if blob, err = base64.StdEncoding.DecodeString(*v.Charsmap); err != nil {
			return nil, fmt.Errorf("%s.precompiled_charsmap: %w", path, err)
		}
	}
	p, err := newPrecompiled(blob)
	if err != nil {
		return nil, fmt.Errorf("%s.precompiled_charsmap: %w", path, err)
	}
	return p, nil
}

// parseBertNormalizer parses a BertNormalizer; accents are stripped when
// lowercasing unless strip_accents says otherwise.
func parseBertNormalizer(raw json.RawMessage, path string) (normalizer, error) {
	v := struct {
		CleanText    bool  `json:"clean_text"`
		ChineseChars bool  `json:"handle_chinese_chars"`
		StripAccents *bool `json:"strip_accents"`
		Lowercase    bool  `json:"lowercase"`
	}{CleanText: true, ChineseChars: true, Lowercase: true}
	if err := decode(raw, path, &v); err != nil {
		return nil, err
	}
	b := bertNormalizer{cleanText: v.CleanText, chineseChars: v.ChineseChars, lowercase: v.Lowercase, stripAccents: v.Lowercase}
	if v.StripAccents != nil {
		b.stripAccents = *v.StripAccents
	}
	return b, nil
}

func parsePattern(p patternJSON, path string) (pattern, error) {
	switch {
	case p.String != nil:
		return stringPattern(*p.String), nil
	case p.Regex != nil:
		re, err := compileRegex(*p.Regex)
		if err != nil {
			return nil, fmt.Errorf("%s.Regex: %w: %w", path, ErrUnsupported, err)
		}
		return regexPattern{re}, nil
	}
	return nil, fmt.Errorf("%s: want {\"String\": ...} or {\"Regex\": ...}", path)
}

// ---- pre-tokenizers ----

func parseBehavior(s, path string) (behavior, error) {
	switch s {
	case "Removed":
		return removed, nil
	case "Isolated", "":
		return isolated, nil
	case "MergedWithPrevious":
		return mergedWithPrevious, nil
	case "MergedWithNext":
		return mergedWithNext, nil
	case "Contiguous":
		return contiguous, nil
	}
	return 0, unsupported(path, "split behavior", s)
}

func parsePreTokenizer(raw json.RawMessage, path string) (preTokenizer, error) {
	typ, err := typeOf(raw, path)
	if err != nil {
		return nil, err
	}
	switch typ {
	case "Sequence":
		return parsePreTokenizerSeq(raw, path)
	case "Metaspace":
		return parseMetaspace(raw, path)
	case "WhitespaceSplit":
		return whitespaceSplit, nil
	case "Whitespace":
		return whitespaceWords, nil
	case "BertPreTokenizer":
		return bertPreTokenizer{}, nil
	case "Punctuation":
		var v struct {
			Behavior string `json:"behavior"`
		}
		if err := decode(raw, path, &v); err != nil {
			return nil, err
		}
		how, err := parseBehavior(v.Behavior, path+".behavior")
		if err != nil {
			return nil, err
		}
		return patternSplit{runePattern(isBertPunct), how}, nil
	case "Digits":
		var v struct {
			Individual bool `json:"individual_digits"`
		}
		if err := decode(raw, path, &v); err != nil {
			return nil, err
		}
		if v.Individual {
			return patternSplit{runePattern(isNumeric), isolated}, nil
		}
		return patternSplit{runePattern(isNumeric), contiguous}, nil
	case "Split":
		return parseSplit(raw, path)
	case "CharDelimiterSplit":
		var v struct {
			Delimiter string `json:"delimiter"`
		}
		if err := decode(raw, path, &v); err != nil {
			return nil, err
		}
		d, n := utf8.DecodeRuneInString(v.Delimiter)
		if n == 0 || n != len(v.Delimiter) {
			return nil, fmt.Errorf("%s.delimiter: %q is not one character", path, v.Delimiter)
		}
		return patternSplit{runePattern(func(r rune) bool { return r == d }), removed}, nil
	}
	return nil, unsupported(path+".type", "pre_tokenizer", typ)
}

// parsePreTokenizerSeq parses a Sequence pre-tokenizer: its
// pre-tokenizers in order.
func parsePreTokenizerSeq(raw json.RawMessage, path string) (preTokenizer, error) {
	var v struct {
		PreTokenizers []json.RawMessage `json:"pretokenizers"`
	}
	if err := decode(raw, path, &v); err != nil {
		return nil, err
	}
	var seq preTokenizerSeq
	for i, r := range v.PreTokenizers {
		p, err := parsePreTokenizer(r, fmt.Sprintf("%s.pretokenizers[%d]", path, i))
		if err != nil {
			return nil, err
		}
		seq = append(seq, p)
	}
	return seq, nil
}

// parseMetaspace parses a Metaspace pre-tokenizer: its replacement
// character, when it prepends one (prepend_scheme, or the older
// add_prefix_space) and whether it splits at it.
func parseMetaspace(raw json.RawMessage, path string) (preTokenizer, error) {
	v := struct {
		Replacement    string  `json:"replacement"`
		AddPrefixSpace *bool   `json:"add_prefix_space"`
		PrependScheme  *string `json:"prepend_scheme"`
		Split          *bool   `json:"split"`
	}{Replacement: "▁"}
	if err := decode(raw, path, &v); err != nil {
		return nil, err
	}
	if utf8.RuneCountInString(v.Replacement) != 1 {
		return nil, fmt.Errorf("%s.replacement: %q is not one character", path, v.Replacement)
	}
	scheme := prependAlways
	if v.PrependScheme != nil {
		switch *v.PrependScheme {
		case "always":
		case "first":
			scheme = prependFirst
		case "never":
			scheme = prependNever
		default:
			return nil, unsupported(path+".prepend_scheme", "prepend scheme", *v.PrependScheme)
		}
	}
	if v.AddPrefixSpace != nil && !*v.AddPrefixSpace {
		if v.PrependScheme != nil && scheme != prependNever {
			return nil, fmt.Errorf("%s: add_prefix_space false contradicts prepend_scheme %q", path, *v.PrependScheme)
		}
		scheme = prependNever
	}
	split := v.Split == nil || *v.Split
	return newMetaspace(v.Replacement, scheme, split), nil
}

// parseSplit parses a Split pre-tokenizer: a pattern (inverted or not) and
// what becomes of its matches (behavior).
func parseSplit(raw json.RawMessage, path string) (preTokenizer, error) {
	var v struct {
		Pattern  patternJSON `json:"pattern"`
		Behavior string      `json:"behavior"`
		Invert   bool        `json:"invert"`
	}
	if err := decode(raw, path, &v); err != nil {
		return nil, err
	}
	pat, err := parsePattern(v.Pattern, path+".pattern")
	if err != nil {
		return nil, err
	}
	how, err := parseBehavior(v.Behavior, path+".behavior")
	if err != nil {
		return nil, err
	}
	if v.Invert {
		pat = invertPattern{pat}
	}
	return patternSplit{pat, how}, nil
}

// ---- post-processors ----

func parseProcessor(raw json.RawMessage, path string) (postProcessor, error) {
	typ, err := typeOf(raw, path)
	if err != nil {
		return nil, err
	}
	switch typ {
	case "Sequence":
		var v struct {
			Processors []json.RawMessage `json:"processors"`
		}
		if err := decode(raw, path, &v); err != nil {
			return nil, err
		}
		var seq processorSeq
		for i, r := range v.Processors {
			p, err := parseProcessor(r, fmt.Sprintf("%s.processors[%d]", path, i))
			if err != nil {
				return nil, err
			}
			seq = append(seq, p)
		}
		return seq, nil
	case "TemplateProcessing":
		return parseTemplate(raw, path)
	case "RobertaProcessing", "BertProcessing":
		v := struct {
			Sep            [2]any `json:"sep"`
			Cls            [2]any `json:"cls"`
			TrimOffsets    bool   `json:"trim_offsets"`
			AddPrefixSpace bool   `json:"add_prefix_space"`
		}{TrimOffsets: true, AddPrefixSpace: true}
		if err := decode(raw, path, &v); err != nil {
			return nil, err
		}
		c := &clsSep{roberta: typ == "RobertaProcessing", trimOffsets: v.TrimOffsets, addPrefixSpace: v.AddPrefixSpace}
		var ok1, ok2 bool
		c.sepTok, c.sep, ok1 = tokenPair(v.Sep)
		c.clsTok, c.cls, ok2 = tokenPair(v.Cls)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("%s: sep and cls must be [token, id]", path)
		}
		return c, nil
	case "ByteLevel":
		v := struct {
			TrimOffsets    bool `json:"trim_offsets"`
			AddPrefixSpace bool `json:"add_prefix_space"`
		}{TrimOffsets: true, AddPrefixSpace: true}
		if err := decode(raw, path, &v); err != nil {
			return nil, err
		}
		return byteLevelProcessing{v.TrimOffsets, v.AddPrefixSpace}, nil
	}
	return nil, unsupported(path+".type", "post_processor", typ)
}

func tokenPair(v [2]any) (string, int64, bool) {
	s, ok1 := v[0].(string)
	f, ok2 := v[1].(float64)
	return s, int64(f), ok1 && ok2
}

func parseTemplate(raw json.RawMessage, path string) (postProcessor, error) {
	var v struct {
		Single        json.RawMessage `json:"single"`
		Pair          json.RawMessage `json:"pair"`
		SpecialTokens map[string]struct {
			ID     string   `json:"id"`
			IDs    []int64  `json:"ids"`
			Tokens []string `json:"tokens"`
		} `json:"special_tokens"`
	}
	if err := decode(raw, path, &v); err != nil {
		return nil, err
	}
	t := &templateProcessing{specials: make(map[string]specialTokens, len(v.SpecialTokens))}
	for k, s := range v.SpecialTokens {
		if len(s.IDs) != len(s.Tokens) {
			return nil, fmt.Errorf("%s.special_tokens[%q]: %d ids but %d tokens", path, k, len(s.IDs), len(s.Tokens))
		}
		t.specials[k] = specialTokens{s.IDs, s.Tokens}
	}
	var err error
	if t.single, err = parseTemplatePieces(v.Single, path+".single", t.specials); err != nil {
		return nil, err
	}
	if t.pair, err = parseTemplatePieces(v.Pair, path+".pair", t.specials); err != nil {
		return nil, err
	}
	return t, nil
}

// parseTemplatePieces reads a template: a list of {"Sequence": {"id": "A",
// "type_id": 0}} and {"SpecialToken": {"id": "[CLS]", "type_id": 0}}, or
// the string form "[CLS]:0 $A:0 [SEP]:0".
func parseTemplatePieces(raw json.RawMessage, path string, specials map[string]specialTokens) ([]templatePiece, error) {
	if isNull(raw) {
		return nil, nil
	}
	var str string
	if json.Unmarshal(raw, &str) == nil {
		return parseTemplateString(str, path, specials)
	}
	var items []struct {
		Sequence *struct {
			ID     string `json:"id"`
			TypeID int64  `json:"type_id"`
		} `json:"Sequence"`
		SpecialToken *struct {
			ID     string `json:"id"`
			TypeID int64  `json:"type_id"`
		} `json:"SpecialToken"`
	}
	if err := decode(raw, path, &items); err != nil {
		return nil, err
	}
	var out []templatePiece
	for i, it := range items {
		switch {
		case it.Sequence != nil:
			seq := 0
			switch it.Sequence.ID {
			case "A":
			case "B":
				seq = 1
			default:
				return nil, fmt.Errorf("%s[%d]: sequence %q is neither A nor B", path, i, it.Sequence.ID)
			}
			out = append(out, templatePiece{seq: seq, typeID: it.Sequence.TypeID})
		case it.SpecialToken != nil:
			if _, ok := specials[it.SpecialToken.ID]; !ok {
				return nil, fmt.Errorf("%s[%d]: special token %q missing from special_tokens", path, i, it.SpecialToken.ID)
			}
			out = append(out, templatePiece{seq: -1, special: it.SpecialToken.ID, typeID: it.SpecialToken.TypeID})
		default:
			return nil, fmt.Errorf("%s[%d]: want Sequence or SpecialToken", path, i)
		}
	}
	return out, nil
}

func parseTemplateString(s, path string, specials map[string]specialTokens) ([]templatePiece, error) {
	var out []templatePiece
	for i, f := range bytes.Fields([]byte(s)) {
		item, typeID := string(f), int64(0)
		if k := bytes.LastIndexByte(f, ':'); k > 0 {
			if n, err := strconv.ParseInt(string(f[k+1:]), 10, 64); err == nil {
				item, typeID = string(f[:k]), n
			}
		}
		switch item {
		case "$", "$A", "$0":
			out = append(out, templatePiece{seq: 0, typeID: typeID})
		case "$B", "$1":
			out = append(out, templatePiece{seq: 1, typeID: typeID})
		default:
			if _, ok := specials[item]; !ok {
				return nil, fmt.Errorf("%s item %d: special token %q missing from special_tokens", path, i, item)
			}
			out = append(out, templatePiece{seq: -1, special: item, typeID: typeID})
		}
	}
	return out, nil
}
