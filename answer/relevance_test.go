package answer_test

import (
	"context"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/schemas"
)

// A quote the notes hold is support, but not an answer to every question:
// cited for something the notes never mention ("XP"), it is not given, and
// the user is told the notes do not seem to answer.
func TestASupportedAnswerToAnotherQuestionIsNotGiven(t *testing.T) {
	install := schemas.Context{Passage: schemas.Passage{ChunkID: "c1", DocID: "d1", Title: "Installation", BlockID: "b1",
		BlockIDs: []string{"b1"}, Lang: "en",
		Text: "Windows: the installer automatically adds the kernel directory to PATH, so siyuan works out of the box."}}
	linux := schemas.Context{Passage: schemas.Passage{ChunkID: "c2", DocID: "d2", Title: "Installation on Linux", BlockID: "b2",
		BlockIDs: []string{"b2"}, Lang: "en", Text: "Linux: unpack the archive and add the kernel directory to PATH yourself."}}
	reply := "According to the notes, «the installer automatically adds the kernel directory to PATH» [1]."
	for _, tc := range []struct {
		name, question, lang string
		reasons              []string
		mode                 string
	}{
		{"asked about what the notes lack", "Can SiYuan run on Windows XP?", "en", nil, schemas.AnswerSearchOnly},
		{"asked about what the note says", "What does the Windows installer add to PATH?", "en", nil, schemas.AnswerLLM},
		{"asked in Russian, its translation lacks it", "SiYuan запускается на Windows XP?", "ru",
			[]string{"translated: en: Can SiYuan run on Windows XP?"}, schemas.AnswerSearchOnly},
		{"asked in Russian without a translation: not judged", "Что установщик Windows добавляет в PATH?", "ru", nil, schemas.AnswerLLM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.SetAnswer(reply)
			if tc.lang == "ru" {
				srv.SetAnswer("В заметках сказано: «the installer automatically adds the kernel directory to PATH» [1].")
			}
			q := &schemas.QueryReranked{Query: schemas.Query{QueryID: "q1", Question: tc.question, Lang: tc.lang}, Mode: schemas.ModeLexical,
				Reasons: tc.reasons, Contexts: []schemas.Context{install, linux}}
			done := (&answer.Answerer{Router: router(t, srv), Analyzer: analyzer(t)}).Answer(context.Background(), q)
			if done.Mode != tc.mode {
				t.Fatalf("mode %s, want %s; reasons %q", done.Mode, tc.mode, done.Reasons)
			}
			if tc.mode == schemas.AnswerLLM {
				if len(done.Citations) != 1 || done.Citations[0].BlockID != "b1" {
					t.Errorf("citations %+v", done.Citations)
				}
				return
			}
			var why string
			for _, r := range done.Reasons {
				if strings.HasPrefix(r, answer.ReasonNotInNotes+":") {
					why = r
				}
			}
			if !strings.Contains(why, "does not address the question") || !strings.Contains(strings.ToLower(why), "xp") {
				t.Errorf("reasons %q: want not_in_notes naming what the notes lack", done.Reasons)
			}
			lead := "Your notes do not seem to answer this question."
			if tc.lang == "ru" {
				lead = "Похоже, в заметках нет ответа на этот вопрос."
			}
			if !strings.HasPrefix(done.Answer, lead) {
				t.Errorf("answer %q, want it to start with %q", done.Answer, lead)
			}
		})
	}
}

// The passages of a search-only answer are cited by the block that matches
// the question, not by the chunk's first block (its heading).
func TestSearchOnlyPassagesCiteTheBlockThatMatches(t *testing.T) {
	text := "# Workspace\n\nA workspace is a folder.\n\nOne workspace can only be served by one kernel process."
	c := schemas.Context{Passage: schemas.Passage{ChunkID: "c1", DocID: "d1", Title: "Workspace", BlockID: "20220615120310-aaaaaaa",
		BlockIDs: []string{"20220615120310-aaaaaaa", "20220615120310-bbbbbbb", "20220615120310-ccccccc"}, Lang: "en", Text: text,
		BlockSpans: []schemas.BlockSpan{{ID: "20220615120310-aaaaaaa", Start: 0, End: 11}, {ID: "20220615120310-bbbbbbb", Start: 13, End: 37},
			{ID: "20220615120310-ccccccc", Start: 39, End: len(text)}}}}
	q := &schemas.QueryReranked{Query: schemas.Query{QueryID: "q1", Question: "How many kernel processes can serve a workspace?", Lang: "en"},
		Mode: schemas.ModeLexical, Contexts: []schemas.Context{c}}
	done := (&answer.Answerer{Analyzer: analyzer(t)}).Answer(context.Background(), q)
	if done.Mode != schemas.AnswerSearchOnly || len(done.Citations) != 1 {
		t.Fatalf("answer %+v", done)
	}
	if got := done.Citations[0]; got.BlockID != "20220615120310-ccccccc" || got.Link != "siyuan://blocks/20220615120310-ccccccc" || got.Number != 1 {
		t.Errorf("citation %+v, want the block about kernel processes, number 1", got)
	}
}

// A question that found nothing because it could not cross into the notes'
// language says so, in its own language, and keeps retrieval's reason.
func TestNothingFoundForAnUntranslatedQuestionSaysWhy(t *testing.T) {
	why := "translation_unavailable: the question is in ru and notes are in en, but no language-model provider can translate it"
	q := &schemas.QueryReranked{Query: schemas.Query{QueryID: "q1", Question: "Сколько процессов ядра обслуживают рабочее пространство?", Lang: "ru"},
		Mode: schemas.ModeLexical, Reasons: []string{"no_embedding_model: none", why}}
	done := (&answer.Answerer{Analyzer: analyzer(t)}).Answer(context.Background(), q)
	if done.Mode != schemas.AnswerSearchOnly || !strings.Contains(done.Answer, "перевести вопрос не удалось") {
		t.Errorf("answer %q (mode %s)", done.Answer, done.Mode)
	}
	if len(done.Reasons) == 0 || done.Reasons[0] != why {
		t.Errorf("reasons %q, want retrieval's %q first", done.Reasons, why)
	}
}
