package claimcheck_test

import "testing"

func TestRatios(t *testing.T) {
	const en = "Mix rice, water and broth in the ratio 1:2:2. Cook for 5 minutes, then rest 10 minutes. Serve at 19:30."
	const ru = "Рис, вода и бульон в пропорции 1:2:2. Варить 5 минут, потом 10 минут настоять. Подавать в 19:30."
	runCases(t, []checkCase{
		{"en: the ratio the block writes passes", "Mix rice, water and broth in the ratio 1:2:2.", en, false, nil},
		{"en: spaces around the colons change nothing", "Mix rice, water and broth in the ratio 1 : 2 : 2.", en, false, nil},
		{"en: a changed part fails although the block writes that number elsewhere", "Mix rice, water and broth in the ratio 1:2:5.", en, false,
			[]string{missing("ratio", "1:2:5")}},
		{"en: the same numbers in another order fail", "Mix rice, water and broth in the ratio 2:1:2.", en, false,
			[]string{missing("ratio", "2:1:2")}},
		{"en: a time is a time, not a ratio", "Serve at 19:30.", en, false, nil},
		{"ru: пропорция из заметки проходит", "Рис, вода и бульон в пропорции 1:2:2.", ru, false, nil},
		{"ru: изменённая часть пропорции не проходит", "Рис, вода и бульон в пропорции 1:2:5.", ru, false,
			[]string{missing("ratio", "1:2:5")}},
		{"ru over en: a translated claim keeps the note's ratio", "Рис, вода и бульон в пропорции 1:2:2.", en, true, nil},
		{"ru over en: a translated claim with another ratio fails", "Рис, вода и бульон в пропорции 1:3:2.", en, true,
			[]string{missing("ratio", "1:3:2"), missing("number", "3")}},
	})
}
