package notes

import (
	"strconv"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
)

// decodeText turns a file's bytes into UTF-8. Valid UTF-8 is returned as it
// is and note is "". Bytes that read as Russian saved in Windows-1251
// (CP1251, old Windows editors) are transcoded from it; anything else keeps
// its valid text and has each invalid byte replaced with U+FFFD. note says
// which, for the user.
func decodeText(content []byte) (text []byte, note string) {
	if utf8.Valid(content) {
		return content, ""
	}
	if looksCP1251(content) {
		if out, err := charmap.Windows1251.NewDecoder().Bytes(content); err == nil {
			return out, "not UTF-8: probably Windows-1251 (CP1251); read as Windows-1251"
		}
	}
	out := make([]byte, 0, len(content)+16)
	n := 0
	for i := 0; i < len(content); {
		r, size := utf8.DecodeRune(content[i:])
		if r == utf8.RuneError && size == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
			n++
		} else {
			out = append(out, content[i:i+size]...)
		}
		i += size
	}
	s := "s"
	if n == 1 {
		s = ""
	}
	return out, strconv.Itoa(n) + " invalid UTF-8 byte" + s + " replaced with U+FFFD"
}

// looksCP1251 reports whether content that is not UTF-8 reads as Cyrillic in
// Windows-1251: most bytes above 0x7F are invalid as UTF-8 and are CP1251
// letters (0xC0-0xFF, Ё 0xA8, ё 0xB8) standing next to other such letters,
// as in words. Latin-1 accents (lone high bytes among ASCII letters) and a
// few stray bytes in UTF-8 text do not.
func looksCP1251(content []byte) bool {
	letter := func(b byte) bool { return b >= 0xC0 || b == 0xA8 || b == 0xB8 }
	high, inWords, invalid := 0, 0, 0
	for i := 0; i < len(content); {
		r, size := utf8.DecodeRune(content[i:])
		if r == utf8.RuneError && size == 1 {
			invalid++
		}
		i += size
	}
	for i, b := range content {
		if b < 0x80 {
			continue
		}
		high++
		if letter(b) && (i > 0 && letter(content[i-1]) || i+1 < len(content) && letter(content[i+1])) {
			inWords++
		}
	}
	return high >= 4 && invalid*2 >= high && inWords*10 >= high*7
}
