package tokenizer_test

import (
	"fmt"
	"log"

	"github.com/exocortex/exocortex/models/tokenizer"
)

func ExampleTokenizer_EncodePair() {
	tok, err := tokenizer.Load("testdata/xlmr-mini.json.gz")
	if err != nil {
		log.Fatal(err)
	}
	q, p := "Где живут ежи?", "Hedgehogs live in forests."
	e := tok.EncodePair(q, p, tokenizer.Truncation{MaxLength: 512})
	for i, id := range e.IDs {
		text := ""
		switch off := e.Offsets[i]; e.SequenceIDs[i] {
		case 0:
			text = q[off[0]:off[1]]
		case 1:
			text = p[off[0]:off[1]]
		}
		fmt.Printf("%d %q %q\n", id, e.Tokens[i], text)
	}
	// Output:
	// 0 "<s>" ""
	// 454 "▁Где" "Где"
	// 5 "▁" " "
	// 194 "ж" "ж"
	// 448 "ив" "ив"
	// 332 "ут" "ут"
	// 5 "▁" " "
	// 10 "е" "е"
	// 194 "ж" "ж"
	// 14 "и" "и"
	// 8 "?" "?"
	// 2 "</s>" ""
	// 2 "</s>" ""
	// 532 "▁He" "He"
	// 3039 "dge" "dge"
	// 197 "h" "h"
	// 120 "o" "o"
	// 115 "g" "g"
	// 9 "s" "s"
	// 2115 "▁live" " live"
	// 15 "▁in" " in"
	// 841 "▁forest" " forest"
	// 9 "s" "s"
	// 7 "." "."
	// 2 "</s>" ""
}
