package answer_test

import (
	"testing"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/schemas"
)

func TestVerifyClaimCitesOnlyTheGivenBlocksThatHoldTheClaim(t *testing.T) {
	a, err := analysis.New(analysis.Full)
	if err != nil {
		t.Fatal(err)
	}
	block := func(id, text string) schemas.Context {
		return schemas.Context{Passage: schemas.Passage{BlockID: id, ChunkID: "c", DocID: "d", Path: "/notes/n.md", Text: text}}
	}
	ravens := block("b1", "Вороны прячут еду под камнями зимой.")
	magpies := block("b2", "Сороки собирают блестящие предметы.")
	for _, tc := range []struct {
		name, claim string
		blocks      []schemas.Context
		cited       []string
		reason      string
	}{
		{"a block that holds the claim's words", "Зимой вороны прячут еду под камнями.", []schemas.Context{magpies, ravens}, []string{"b1"}, ""},
		{"a quote of the block", "В заметке: «прячут еду под камнями».", []schemas.Context{ravens}, []string{"b1"}, ""},
		{"a quote the block does not hold", "В заметке: «прячут еду в гнёздах летом».", []schemas.Context{ravens}, nil, answer.DropQuoteNotFound},
		{"the claim negates the block", "Вороны не прячут еду под камнями.", []schemas.Context{ravens}, nil, answer.DropPolarity},
		{"another block's words", "Вороны прячут еду под камнями.", []schemas.Context{magpies}, nil, answer.DropUnsupported},
		{"no block given", "Вороны прячут еду.", nil, nil, answer.DropUncited},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cites, reason := answer.VerifyClaim(a, tc.claim, tc.blocks)
			var ids []string
			for _, c := range cites {
				ids = append(ids, c.BlockID)
				if c.Quote == "" || c.Link == "" {
					t.Errorf("citation %+v lacks its quote or link", c)
				}
			}
			if len(ids) != len(tc.cited) || (len(ids) > 0 && ids[0] != tc.cited[0]) || reason != tc.reason {
				t.Errorf("cited %v (%q), want %v (%q)", ids, reason, tc.cited, tc.reason)
			}
		})
	}
}
