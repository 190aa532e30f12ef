package claimcheck

import (
	"unicode/utf8"
)

// commonStarters are capitalised words that open sentences of answers
// without being names: a sentence-initial word is a name only when it is
// none of these and other signs say so (see claimNames).
var commonStarters = wordSet(`users user you click open press use go select choose enable disable set type enter
	both there note notes data files file then first next finally after before when once while each every
	template templates block blocks document documents doc docs notebook notebooks settings setting sync
	synchronization cloud local search query queries export import backup snapshots snapshot history
	tags tag links link references reference assets asset plugins plugin themes theme
	пользователи пользователь нажмите откройте выберите используйте включите отключите перейдите введите укажите
	можно нужно данные файлы заметки блоки документы шаблоны настройки синхронизация поиск экспорт импорт
	сначала затем потом после перед когда если`)

// claimNames returns the claim's proper names that the evidence does not
// hold. A name is a word capitalised inside a sentence, a mixed-case word
// (SiYuan, iCloud), an acronym (API), a Latin word in a Cyrillic claim, or a
// word inside quotes (a UI label). A capitalised word that starts a
// sentence is taken for a name only when it is absent from the evidence,
// is not a common sentence opener, and the evidence has a name of its own
// that the claim lacks (a swapped name: "Obsidian stores..." over "SiYuan
// stores..."). With CrossLanguage, names in the other script than the
// evidence's are not required.
func claimNames(e *Evidence, text string, toks []token, used []bool, o Options) []string {
	claimScr := dominantScript(toks)
	quoted := quotedTokens(toks)
	var out []string
	var initials []int
	for i, t := range toks {
		if t.kind != tWord || used[i] || !nameCandidate(t.low) {
			continue
		}
		if utf8.RuneCountInString(t.low) < 2 && !quoted[i] {
			continue
		}
		if o.CrossLanguage && t.scr != e.scr {
			continue
		}
		sh := shape(t.raw)
		isName := quoted[i] || sh == shapeMixed || sh == shapeAllCaps || codeLike(toks, i) ||
			claimScr == scriptCyr && t.scr == scriptLat ||
			sh == shapeCapital && !t.initial
		if !isName {
			if sh == shapeCapital && t.initial && !commonStarters[t.low] {
				initials = append(initials, i)
			}
			continue
		}
		if !e.hasName(t) {
			out = append(out, t.raw)
		}
	}
	if len(initials) > 0 {
		lacks := e.lacksOwnName(toks)
		for _, i := range initials {
			if !e.hasName(toks[i]) && (lacks || e.swappedAt(toks, i)) {
				out = append(out, toks[i].raw)
			}
		}
	}
	return out
}

// swappedAt reports whether the claim's sentence-initial word i stands
// where the evidence has another capitalised word before the same next
// word ("Obsidian does not..." over "SiYuan does not...", "#Obsidian: The"
// over "#Note: The"): a swapped name, however many other names the claim
// shares with the evidence.
func (e *Evidence) swappedAt(claim []token, i int) bool {
	next := nextWord(claim, i)
	if next < 0 {
		return false
	}
	nextLemma := e.lemma(claim[next].low)
	for k, t := range e.toks {
		if t.kind != tWord || (t.low != claim[next].low && (nextLemma == "" || e.lemma(t.low) != nextLemma)) {
			continue
		}
		p := prevWord(e.toks, k)
		if p < 0 || e.toks[p].low == claim[i].low {
			continue
		}
		if sh := shape(e.toks[p].raw); sh == shapeCapital || sh == shapeMixed || sh == shapeAllCaps {
			return true
		}
	}
	return false
}

// lemma is a word's dictionary form ("утвердила", "утвердил": one verb),
// so a swapped name is seen across a verb's gender or number; "" without
// an analyzer.
func (e *Evidence) lemma(word string) string {
	if e.a == nil {
		return ""
	}
	return e.a.Lemmas(word)
}

func nextWord(toks []token, i int) int {
	for j := i + 1; j < len(toks); j++ {
		if toks[j].kind == tWord {
			return j
		}
	}
	return -1
}

func prevWord(toks []token, i int) int {
	for j := i - 1; j >= 0; j-- {
		if toks[j].kind == tWord {
			return j
		}
	}
	return -1
}

// codeLike reports whether word i is part of a path, a file name, a flag or
// an identifier: joined to / _ = \ @, a dot between words ("conf.json",
// ".md"), or a leading "-" or "--" ("--ssl", "-u").
func codeLike(toks []token, i int) bool {
	if i > 0 && !toks[i].space {
		p := toks[i-1]
		switch p.raw {
		case "/", "_", "=", "\\", "@", "~":
			return true
		case ".":
			return p.space || i > 1 && !p.space && isWordOrNum(toks[i-2])
		case "-":
			return p.space || i > 1 && toks[i-2].raw == "-" && !p.space
		}
	}
	if n := i + 1; n < len(toks) && !toks[n].space {
		switch toks[n].raw {
		case "/", "_", "=", "\\", "@":
			return true
		case ".":
			return n+1 < len(toks) && !toks[n+1].space && toks[n+1].kind == tWord
		}
	}
	return false
}

// nameCandidate: words that are never names by themselves.
func nameCandidate(w string) bool {
	if isStopword(w) || negationWords[w] || fillerWords[w] || connectives[w] || isLimiterWord(w) {
		return false
	}
	if _, ok := unitWords[w]; ok {
		return false
	}
	if _, ok := months[w]; ok {
		return false
	}
	if _, ok := cardinals[w]; ok {
		return false
	}
	_, ok := meridiem[w]
	return !ok
}

// quotedTokens marks the tokens inside «», “”, „“, "" and “ quotes.
func quotedTokens(toks []token) []bool {
	q := make([]bool, len(toks))
	var closer string
	for i, t := range toks {
		if t.kind == tPunct {
			switch {
			case closer != "" && t.raw == closer:
				closer = ""
				continue
			case closer == "":
				switch t.raw {
				case "«":
					closer = "»"
				case "“":
					closer = "”"
				case "„":
					closer = "“"
				case "\"":
					closer = "\""
				case "`":
					closer = "`"
				}
				if closer != "" {
					continue
				}
			}
		}
		q[i] = closer != ""
	}
	if closer != "" { // an unclosed quote marks nothing
		return make([]bool, len(toks))
	}
	return q
}

// hasName reports whether the evidence holds the name t: the same word in
// any case, a lemma of it, a longer word it begins (Sync/Synchronization),
// or, for Cyrillic, a word sharing its stem (Москве/Москва).
func (e *Evidence) hasName(t token) bool {
	w := t.low
	if e.words[w] {
		return true
	}
	for _, r := range readings(e.a, w) {
		if e.lemmas[r] {
			return true
		}
	}
	n := utf8.RuneCountInString(w)
	for _, ew := range e.wordList {
		if sameStem(w, n, ew, t.scr == scriptCyr) {
			return true
		}
	}
	return false
}

// sameStem: a (n letters) begins b (4 letters at least), or, for Cyrillic,
// a and b share a prefix of at least 4 letters and all but two of the
// shorter one's.
func sameStem(a string, n int, b string, cyr bool) bool {
	if n >= 4 && len(b) > len(a) && b[:len(a)] == a {
		return true
	}
	if !cyr {
		return false
	}
	common := 0
	ai, bi := 0, 0
	for ai < len(a) && bi < len(b) {
		ra, sa := utf8.DecodeRuneInString(a[ai:])
		rb, sb := utf8.DecodeRuneInString(b[bi:])
		if ra != rb {
			break
		}
		common++
		ai += sa
		bi += sb
	}
	shorter := min(n, utf8.RuneCountInString(b))
	return common >= 4 && common >= shorter-2
}

// lacksOwnName reports whether the evidence has a name of its own that no
// word of the claim matches: the sign of a swapped name.
func (e *Evidence) lacksOwnName(claim []token) bool {
	for _, n := range e.names {
		found := false
		cyr := !isASCII(n)
		nn := utf8.RuneCountInString(n)
		for _, t := range claim {
			if t.kind == tWord && (t.low == n || sameStem(n, nn, t.low, cyr) || sameStem(t.low, utf8.RuneCountInString(t.low), n, cyr)) {
				found = true
				break
			}
		}
		if !found {
			return true
		}
	}
	return false
}

// isEvidenceName: a word of the evidence that is a name by its shape
// (mixed case, acronym) or capitalised inside a sentence.
func isEvidenceName(toks []token, i int) bool {
	t := toks[i]
	if !nameCandidate(t.low) || utf8.RuneCountInString(t.low) < 2 {
		return false
	}
	switch shape(t.raw) {
	case shapeMixed, shapeAllCaps:
		return true
	case shapeCapital:
		return !t.initial
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
