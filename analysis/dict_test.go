package analysis

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/kljensen/snowball/russian"
)

// embedded returns an embedded dictionary file, gunzipped.
func embedded(t *testing.T, name string) []byte {
	t.Helper()
	f, err := dictFS.Open("data/ru-" + name + ".gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDictLemmas(t *testing.T) {
	d, err := Russian()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		word string
		want []string
	}{
		{"a noun form gives its nominative singular", "кошкой", []string{"кошка"}},
		{"a word spelled with е is found under its ё spelling", "елка", []string{"елка"}},
		{"a word spelled with ё is found as it is", "ёлка", []string{"елка"}},
		{"an ambiguous form gives each lemma once", "стали", []string{"сталь", "стать"}},
		{"a hyphenated word is found whole", "санкт-петербурга", []string{"санкт-петербург"}},
		{"a word the dictionary lacks gives nothing", "зумерами", nil},
		{"a capitalised word gives nothing", "Кошка", nil},
		{"a Latin word gives nothing", "cat", nil},
		{"an empty word gives nothing", "", nil},
		{"a word of 48 letters gives nothing", strings.Repeat("а", 48), nil},
		{"a word of 100 letters gives nothing", strings.Repeat("а", 100), nil},
		{"a very long real-looking word gives nothing", strings.Repeat("достопримечательность", 5), nil},
		{"a word with a letter outside Windows-1251 gives nothing", "їжак", nil},
		{"a word with a stress mark gives nothing", "моло\u0301ко", nil},
		{"a word with an emoji gives nothing", "кот😺", nil},
		{"the key separator byte gives nothing", "\x01", nil},
		{"a word with the key separator inside gives nothing", "кот\x01ы", nil},
		{"invalid UTF-8 gives nothing", "\xff\xfe", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := d.Lemmas(nil, tc.word); !slices.Equal(got, tc.want) {
				t.Errorf("Lemmas(%q) = %q, want %q", tc.word, got, tc.want)
			}
		})
	}
	t.Run("lemmas are appended after what dst holds", func(t *testing.T) {
		got := d.Lemmas([]string{"сталь"}, "стали")
		if want := []string{"сталь", "сталь", "стать"}; !slices.Equal(got, want) {
			t.Errorf("Lemmas([сталь], стали) = %q, want %q", got, want)
		}
	})
}

func TestAnalyzerOnOddWords(t *testing.T) {
	full := newAnalyzer(t, Full)
	long := strings.Repeat("а", 98) + "ми"
	cases := []struct {
		name string
		text string
		want string
	}{
		{"empty text gives nothing", "", ""},
		{"a word of 100 letters gives its Snowball stem", long, russian.Stem(long, true)},
		{"a word outside Windows-1251 gives its Snowball stem", "ѣдами", russian.Stem("ѣдами", true)},
		{"invalid UTF-8 separates words", "кот\xffпёс", "кот пес"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := full.Lemmas(tc.text); got != tc.want {
				t.Errorf("Lemmas(%q) = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
}

func TestParseDAWGRejectsTruncatedInput(t *testing.T) {
	raw := embedded(t, "words.dawg")
	if _, err := parseDAWG(raw); err != nil {
		t.Fatalf("the embedded DAWG does not parse: %v", err)
	}
	n := int(binary.LittleEndian.Uint32(raw))
	cases := []struct {
		name string
		size int
	}{
		{"an empty file", 0},
		{"a unit count cut short", 3},
		{"a unit count and no units", 4},
		{"the header's 8 bytes with units missing", 8},
		{"units cut in the middle", 4 + 2*n},
		{"the last unit cut by a byte", 4 + 4*n - 1},
		{"units without the guide's length", 4 + 4*n},
		{"the guide's length without the guide", 8 + 4*n},
		{"the guide cut in the middle", 8 + 4*n + n},
		{"the guide cut by a byte", len(raw) - 1},
	}
	for _, tc := range cases {
		t.Run(tc.name+" is an error", func(t *testing.T) {
			if d, err := parseDAWG(bytes.Clone(raw[:tc.size])); err == nil {
				t.Errorf("parseDAWG of %d of %d bytes = %d units, want an error", tc.size, len(raw), len(d.units))
			}
		})
	}
	t.Run("every proper prefix is an error", func(t *testing.T) {
		for size := 0; size < len(raw); size += 1 + len(raw)/61 {
			if _, err := parseDAWG(raw[:size]); err == nil {
				t.Fatalf("parseDAWG accepted %d of %d bytes", size, len(raw))
			}
		}
	})
	t.Run("a guide longer than the units is an error", func(t *testing.T) {
		b := binary.LittleEndian.AppendUint32(nil, 1)
		b = binary.LittleEndian.AppendUint32(b, 0)
		b = binary.LittleEndian.AppendUint32(b, 2)
		b = append(b, 0, 0, 0, 0)
		if _, err := parseDAWG(b); err == nil {
			t.Error("parseDAWG accepted 2 guide entries for 1 unit")
		}
	})
}

func TestParseParadigmsRejectsTruncatedInput(t *testing.T) {
	raw := embedded(t, "paradigms.array")
	if _, err := parseParadigms(raw); err != nil {
		t.Fatalf("the embedded paradigms do not parse: %v", err)
	}
	cases := []struct {
		name string
		size int
	}{
		{"an empty file", 0},
		{"half a count", 1},
		{"a count without paradigms", 2},
		{"the first paradigm's length without its ids", 4},
		{"an odd number of bytes", len(raw)/2 | 1},
		{"paradigms cut in the middle", len(raw) / 2 &^ 1},
		{"the last id missing", len(raw) - 2},
		{"the last id cut by a byte", len(raw) - 1},
	}
	for _, tc := range cases {
		t.Run(tc.name+" is an error", func(t *testing.T) {
			if p, err := parseParadigms(bytes.Clone(raw[:tc.size])); err == nil {
				t.Errorf("parseParadigms of %d of %d bytes = %d paradigms, want an error", tc.size, len(raw), len(p))
			}
		})
	}
	t.Run("a paradigm whose size is not a multiple of 3 is an error", func(t *testing.T) {
		b := []byte{1, 0, 2, 0, 0, 0, 0, 0}
		if _, err := parseParadigms(b); err == nil {
			t.Error("parseParadigms accepted a paradigm of 2 ids")
		}
	})
	t.Run("every proper prefix is an error", func(t *testing.T) {
		for size := 0; size < len(raw); size += 1 + len(raw)/997 {
			if _, err := parseParadigms(raw[:size]); err == nil {
				t.Fatalf("parseParadigms accepted %d of %d bytes", size, len(raw))
			}
		}
	})
}

func TestFormsListsWordsTheDictionaryKnows(t *testing.T) {
	d, err := Russian()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	d.Forms(func(form string) bool {
		if seen[form] {
			t.Errorf("form %q listed twice", form)
		}
		seen[form] = true
		if got := d.Lemmas(nil, strings.ReplaceAll(form, "ё", "е")); len(got) == 0 {
			t.Errorf("form %q has no lemma", form)
		}
		return len(seen) < 5000
	})
	if len(seen) != 5000 {
		t.Fatalf("listed %d forms before stopping, want 5000", len(seen))
	}
}
