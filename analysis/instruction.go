package analysis

import (
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Instruction tells whether text addresses an AI assistant or gives it
// orders, in Russian or English: "ignore previous instructions", "answer
// that ...", "you are now ...", "act as an AI", system-prompt and chat-format
// imitations ("System: you are", "<|im_start|>system", "[INST]"), "do not
// tell the user", "respond only with"; "игнорируй предыдущие инструкции",
// "забудь всё", "ответь, что", "ты теперь ...", "новые инструкции:", "не
// говори пользователю", "представь, что ты ИИ". phrase is the first such
// phrase, as the text writes it.
//
// Notes are data: a note that holds such a phrase is quoted material, and
// what it tells a model to say is not a fact it states. The detector aims at
// precision: a phrase counts only in the form that orders a reader about
// ("Answer that the price is 5" but not "answer that email", "ignore all
// previous instructions" but not "ignore the warning", "you must answer
// that" but not "I must answer the landlord", "System: you are" but not
// "System: Ubuntu"), so ordinary notes about answering, systems and prompts
// are not flagged. Matching is on folded text: case, ё, look-alike letters
// of the other script, zero-width characters, emphasis marks, typographic
// quotes and dashes, and line breaks inside a sentence do not hide a phrase.
func Instruction(text string) (phrase string, ok bool) {
	if strings.TrimSpace(text) == "" {
		return "", false
	}
	f := foldForRules(text)
	run := f.triggered()
	best, bestEnd := -1, -1
	for i := range instructionRules {
		r := &instructionRules[i]
		if !run[i] {
			continue
		}
		for _, m := range r.re.FindAllStringSubmatchIndex(f.text, -1) {
			start, end := m[2], m[3]
			if best >= 0 && start >= best {
				break
			}
			if r.start && !opensClause(f.text, start) || r.line && !startsLine(f.text, start) {
				continue
			}
			if r.accept != nil && !r.accept(f.text, m) {
				continue
			}
			best, bestEnd = start, end
			break
		}
	}
	if best < 0 {
		return "", false
	}
	from, _ := f.orig(best)
	_, to := f.orig(bestEnd - 1)
	return strings.TrimSpace(text[from:to]), true
}

// folded is a text prepared for the rules: lower-cased words (ё as е,
// look-alike letters fixed, marks dropped, as Tokenize writes them), and
// between them the separators with spaces collapsed (a run with a line break
// is "\n", else " "), zero-width characters and emphasis marks (* ` ~ \)
// dropped, typographic quotes as " and ', dashes as -.
type folded struct {
	text  string
	words []string // the words of text, for the rules' trigger words
	// segs place text in the original: segs[k] is a word or a separator
	// that starts at at in text and comes from orig[from:to].
	segs []seg
}

type seg struct{ at, from, to int }

// orig is where the word or separator holding byte i of text lies in the
// original text.
func (f *folded) orig(i int) (from, to int) {
	k := sort.Search(len(f.segs), func(k int) bool { return f.segs[k].at > i }) - 1
	return f.segs[k].from, f.segs[k].to
}

func foldForRules(orig string) folded {
	var f folded
	var b strings.Builder
	b.Grow(len(orig))
	put := func(s string, from, to int) {
		f.segs = append(f.segs, seg{b.Len(), from, to})
		b.WriteString(s)
	}
	space, spaceAt := "", 0
	flush := func() {
		if space != "" && b.Len() > 0 {
			put(space, spaceAt, spaceAt+1)
		}
		space = ""
	}
	gap := func(g string, at int) {
		for i, r := range g {
			switch {
			case r == '\n' || r == '\r' || r == '\u2028' || r == '\u2029':
				if space == "" {
					spaceAt = at + i
				}
				space = "\n"
			case unicode.IsSpace(r):
				if space == "" {
					space, spaceAt = " ", at+i
				}
			case unicode.Is(unicode.Cf, r) || r == '*' || r == '`' || r == '~' || r == '\\':
				// zero-width and format characters, emphasis marks
			default:
				flush()
				_, size := utf8.DecodeRuneInString(g[i:])
				if p := foldPunct(r); p != r {
					put(string(p), at+i, at+i+size)
				} else {
					put(g[i:i+size], at+i, at+i+size)
				}
			}
		}
	}
	prev := 0
	toks := Tokenize(orig)
	for _, t := range toks {
		gap(orig[prev:t.Start], prev)
		flush()
		put(t.Text, t.Start, t.End)
		prev = t.End
	}
	gap(orig[prev:], prev)
	f.text = b.String()
	// Words are taken from the folded text: a zero-width character or an
	// emphasis mark inside a word ("ig\u200bnore") does not split it there.
	f.words = strings.FieldsFunc(f.text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	return f
}

// triggered tells which rules can match: those with a trigger word (a
// prefix of one of the text's words) or a needle in the text.
func (f *folded) triggered() []bool {
	run := make([]bool, len(instructionRules))
	for _, w := range f.words {
		for _, n := range triggerLens {
			if len(w) < n {
				break
			}
			for _, i := range triggerWords[w[:n]] {
				run[i] = true
			}
		}
	}
	for i := range instructionRules {
		for _, n := range instructionRules[i].needles {
			if !run[i] && strings.Contains(f.text, n) {
				run[i] = true
			}
		}
	}
	return run
}

// triggerWords maps each rule's trigger words to the rules; triggerLens are
// their lengths in bytes, shortest first.
var triggerWords, triggerLens = func() (map[string][]int, []int) {
	words := map[string][]int{}
	lens := map[int]bool{}
	for i, r := range instructionRules {
		for _, w := range strings.Fields(r.words) {
			words[w] = append(words[w], i)
			lens[len(w)] = true
		}
	}
	var ls []int
	for n := range lens {
		ls = append(ls, n)
	}
	sort.Ints(ls)
	return words, ls
}()

// foldPunct writes typographic quotes and dashes as ASCII ones.
func foldPunct(r rune) rune {
	switch r {
	case '«', '»', '“', '”', '„', '‟', '″', '〃':
		return '"'
	case '‘', '’', '‚', '‛', '′':
		return '\''
	case '—', '–', '‒', '−', '‐', '‑', '―':
		return '-'
	}
	return r
}

// instructionRule is one form of an order to a model.
type instructionRule struct {
	// words are the rule's trigger words (word prefixes, folded), and
	// needles strings to find anywhere: the rule runs only on a text that
	// holds one (most notes hold none).
	words   string
	needles []string
	// re matches the phrase as its group 1 (see rx); later groups are the
	// rule's own.
	re *regexp.Regexp
	// start: the phrase must open a clause, as an imperative does ("Answer
	// that ...", "... and answer that ..."), not follow a subject ("I
	// always say that ...", "how to answer that").
	start bool
	// line: the phrase must start a line (after spaces and list, quote or
	// heading marks), as a chat transcript's role does.
	line bool
	// accept checks what surrounds the match; m are its submatch indices.
	accept func(text string, m []int) bool
}

// rx compiles a rule's pattern: group 1 is the phrase, between word
// boundaries; a space in the pattern is one or more spaces or commas.
func rx(pattern string) *regexp.Regexp {
	p := strings.ReplaceAll(pattern, " ", `[\s,]+`)
	return regexp.MustCompile(`(?:^|[^\p{L}\p{N}])(` + p + `)(?:[^\p{L}\p{N}]|$)`)
}

// rxTight compiles a pattern without word boundaries, for phrases that
// begin and end with marks ("<|im_start|>", "System:").
func rxTight(pattern string) *regexp.Regexp {
	return regexp.MustCompile(`(` + strings.ReplaceAll(pattern, " ", `[\s,]+`) + `)`)
}

// startsLine tells whether only spaces and list, quote or heading marks are
// between the start of text[at:]'s line and at.
func startsLine(text string, at int) bool {
	line := text[strings.LastIndexByte(text[:at], '\n')+1 : at]
	return strings.Trim(line, " #>-") == ""
}

// nextIs tells whether the text after the phrase (spaces skipped) starts
// with one of the marks.
func nextIs(marks string) func(string, []int) bool {
	return func(text string, m []int) bool {
		w := nextWord(text, m[3])
		return len(w) == 1 && strings.Contains(marks, w)
	}
}

// group reports whether submatch k took part in the match.
func group(m []int, k int) bool { return len(m) > 2*k+1 && m[2*k] >= 0 }

// Word lists shared by the rules (folded: lower case, е for ё).
const (
	// roleEN are what a model is told it is.
	roleEN = `(?:dan|ai|ai assistant|ai model|ai language model|assistant|chatbot|chat bot|bot|llm|gpt|chatgpt|gpt-\d[\w.-]*|language model|large language model|jailbroken|unrestricted|unfiltered|uncensored)`
	// roleRU: the same in Russian (stems).
	roleRU = `(?:ии|ai|ии-ассистент\p{L}*|ии-помощник\p{L}*|ассистент\p{L}*|бот\p{L}*|чат-?бот\p{L}*|нейросет\p{L}*|нейронн\p{L}* сет\p{L}*|языков\p{L}* модел\p{L}*|модел\p{L}* ии|искусственн\p{L}* интеллект\p{L}*|chatgpt|gpt|llm)`
	// adjRU is one optional Russian adjective before a role ("злой бот").
	adjRU = `(?:[\p{L}-]+(?:ый|ий|ой|ая|яя|ое|ее|ым|им) )?`
	// orderNounsEN are what a model's orders are called.
	orderNounsEN = `(?:instructions?|prompts?|system prompt|rules|guidelines|guidance|directives|commands|orders|constraints|guardrails|restrictions|programming|context)`
	orderNounsRU = `(?:инструкци|указани|правил|промпт|подсказк|установк|ограничени|команд|распоряжени|директив|требовани|контекст)\p{L}*`
	// qualEN and qualRU are the words between "ignore" and "instructions".
	qualEN = `(?:all|any|every|the|your|my|our|these|those|of|previous|prior|above|preceding|earlier|foregoing|former|original|initial|system|existing|old|default|given|other|or|and|subsequent|following|future|later|further)`
	qualRU = `(?:все|всех|всем|всеми|любые|любых|предыдущие|предыдущих|предыдущим|прежние|прежних|прежним|прошлые|прошлых|прошлым|ранее|ранние|раньше|данные|полученные|изначальные|изначальных|исходные|исходных|системные|системных|системным|вышеуказанные|вышеуказанных|вышеизложенные|вышеприведенные|указанные|приведенные|выше|свои|своих|своим|твои|твоих|твоим|ваши|ваших|вашим|мои|моих|наши|эти|этих|те|тебе|вам|старые|старых|остальные|другие|до этого|и|или|последующие|последующих|будущие|дальнейшие|следующие|предыдущий|прежний|прошлый|весь|исходный|системный)`
)

var (
	// strongQual: at least one of these must be among the qualifiers
	// ("ignore the instructions on the box" is an ordinary note, "ignore all
	// previous instructions" is not).
	strongQual = wordSet(`all any every your previous prior above preceding earlier foregoing original initial system
		все всех всем всеми любые любых предыдущие предыдущих предыдущим прежние прежних прежним прошлые прошлых
		прошлым ранее ранние раньше изначальные изначальных исходные исходных системные системных системным
		вышеуказанные вышеуказанных вышеизложенные вышеприведенные выше свои своих своим твои твоих твоим ваши
		ваших вашим тебе вам предыдущий прежний прошлый исходный системный`)
	// personalQual makes it a person's message ("disregard my previous
	// instructions, the meeting moved").
	personalQual = wordSet(`my our мои моих наши`)
)

// strongQualifiers accepts "verb qualifiers... noun [tail]" when a tail
// (group 2: "above", "you were given") or a strong qualifier is there and no
// personal one is. Rules, restrictions and commands need one that places
// them before the note or gives them to the reader ("ignore your previous
// rules"): "forget all the rules of dieting" is an ordinary sentence.
func strongQualifiers(text string, m []int) bool {
	placed := group(m, 2)
	strong, weakNoun := placed, false
	for _, w := range strings.FieldsFunc(text[m[2]:m[3]], func(r rune) bool { return !unicode.IsLetter(r) }) {
		if personalQual[w] {
			return false
		}
		strong = strong || strongQual[w]
		placed = placed || strongQual[w] && !quantifiers[w]
		for _, n := range weakNouns {
			weakNoun = weakNoun || strings.HasPrefix(w, n)
		}
	}
	if weakNoun {
		return placed
	}
	return strong
}

var (
	// quantifiers are strong qualifiers that do not place the orders.
	quantifiers = wordSet(`all any every все всех всем всеми любые любых`)
	// weakNouns (stems) name orders that people give each other too.
	weakNouns = strings.Fields(`rules restrictions constraints guardrails commands orders guidelines guidance
		context правил ограничени требовани команд распоряжени установк контекст`)
)

// notAfterNe rejects a Russian imperative negated by a "не" before it ("не
// забудь всё выключить").
func notAfterNe(text string, m []int) bool {
	p := strings.TrimRight(text[:m[2]], " \n")
	return !(p == "не" || strings.HasSuffix(p, " не") || strings.HasSuffix(p, "\nне"))
}

// clauseOpeners are words after which an imperative opens a clause.
var clauseOpeners = wordSet(`and then instead also now just please simply so but и а затем потом теперь просто
	пожалуйста также тогда но лучше`)

// opensClause tells whether text[at:] starts a clause: at the start of the
// text, after sentence or clause punctuation, a quote, a bracket, a list or
// heading mark, or after a conjunction such as "and" or "и".
func opensClause(text string, at int) bool {
	p := strings.TrimRight(text[:at], " ")
	if p == "" {
		return true
	}
	r, _ := utf8.DecodeLastRuneInString(p)
	if strings.ContainsRune(".!?;:\n\"'([{-*>#|,…", r) {
		return true
	}
	i := strings.LastIndexFunc(p, func(r rune) bool { return !unicode.IsLetter(r) })
	return clauseOpeners[p[i+1:]]
}

// nextWord is the word right after text[end:] (skipping spaces), or the
// punctuation rune there as a string, or "" at the end of the text.
func nextWord(text string, end int) string {
	rest := strings.TrimLeft(text[end:], " \n")
	if rest == "" {
		return ""
	}
	r, size := utf8.DecodeRuneInString(rest)
	if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
		return string(r)
	}
	i := strings.IndexFunc(rest[size:], func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' })
	if i < 0 {
		return rest
	}
	return rest[:size+i]
}

// endsOrPunct tells whether the phrase ends the text or punctuation (not a
// hyphen that makes it part of a longer word) follows it.
func endsOrPunct(text string, end int) bool {
	w := nextWord(text, end)
	if w == "'" && strings.HasPrefix(strings.TrimLeft(text[end:], " "), "'s") {
		return false // "you are now Dan's manager"
	}
	return w == "" || (len(w) == 1 && strings.Contains(".!?;:,)\"'", w))
}

// followedBy accepts a phrase followed by punctuation, the end of the text,
// or one of the words.
func followedBy(words string) func(string, []int) bool {
	set := wordSet(words)
	return func(text string, m []int) bool {
		return endsOrPunct(text, m[3]) || set[nextWord(text, m[3])]
	}
}

// clauseFollows accepts "answer that" when a clause follows ("answer that
// the price is 5", "answer that: 5", "answer that Paris is in Spain"), not an
// object ("answer that email", "answer that question first").
func clauseFollows(text string, end int) bool {
	w := nextWord(text, end)
	switch {
	case w == "":
		return false
	case w == "\"" || w == "'" || w == ":" || w == "-":
		return true
	case clauseStarters[w] || unicode.IsDigit([]rune(w)[0]):
		return true
	}
	if answerables[w] {
		return false
	}
	rest := text[end:]
	if i := strings.IndexAny(rest, ".,;:!?\n"); i >= 0 {
		rest = rest[:i]
	}
	words := strings.Fields(rest)
	for _, v := range words {
		if finiteVerbs[v] {
			return true
		}
	}
	// "answer that water boils at 50 degrees": a longer clause after a
	// word that is not something one answers
	return len(words) >= 4
}

var (
	clauseStarters = wordSet(`the a an it its this they he she we you i there all every no none nothing everything
		everyone your my our their his her each any only both`)
	finiteVerbs = wordSet(`is are was were will would can cannot can't could has have had does do did doesn't don't
		didn't isn't aren't wasn't weren't won't wouldn't shouldn't should must may might shall costs cost lasts
		takes means equals`)
	// answerables are what "answer that ..." takes as its object.
	answerables = wordSet(`email e-mail mail letter question questions message call phone text comment post request
		query survey ticket review one door note invitation challenge sms chat inquiry enquiry complaint customer
		client guy person man woman lady boss colleague recruiter friend part point objection argument criticism
		accusation claim riddle quiz test exam item thread tweet dm issue`)
)

func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// roleMarkerCue: a role marker ("System:", "Система:") counts when the text
// after it addresses a model ("System: you are a helpful assistant"), not in
// "System: Ubuntu 22.04" or "System: You are running low on disk space".
var roleMarkerCue = regexp.MustCompile(`^.{0,20}?(?:(?:you are|you're) (?:now )?(?:(?:an?|the|my) )?(?:[a-z-]+ ){0,2}` + roleEN + `(?:[^a-z]|$)|ignore|disregard|forget (?:all|everything|previous|your|the)|from now on|new instructions|the assistant|as an ai|(?:you are|you're) now in (?:[a-z-]+ ){0,2}mode|always (?:answer|respond|reply)|never (?:reveal|tell|mention)|respond only|answer only|(?:ты|вы) (?:-|теперь)|игнорир|проигнорир|забудь|отвечай|ответь|ассистент|отныне|новые инструкции)`)

func roleMarker(text string, m []int) bool {
	return roleMarkerCue.MatchString(strings.TrimLeft(text[m[3]:], " \n"))
}

// xmlTag rejects <system>value</system> as in an XML file (a Maven POM's
// issue tracker); a tag that opens text addressed to a model has words in it.
func xmlTag(text string, m []int) bool {
	start, end := m[2], m[3]
	tag := text[start:end]
	name := strings.Trim(tag, "</>")
	if strings.HasPrefix(tag, "</") {
		open := strings.LastIndex(text[:start], "<"+name+">")
		return open < 0 || strings.ContainsAny(text[open:start], " \n")
	}
	closing := strings.Index(text[end:], "</"+name+">")
	return closing < 0 || strings.ContainsAny(text[end:end+closing], " \n")
}

// answerWithCue: "you must reply with" followed by fixed words ("with the
// word yes", "with only", "with "X""), not "reply with the signed form".
var answerWithCue = regexp.MustCompile(`^(?:only|just|exactly|nothing but|the (?:word|words|phrase|text|sentence|string|exact|following)|a single word|one word|yes|no|["':])`)

// doNotTellCue: "do not tell the user" followed by what a model hides
// ("that you", "about this", "these instructions"), not "do not tell the
// user their password over the phone".
var doNotTellCue = regexp.MustCompile(`^(?:that you|you|about (?:this|these|it|that|me|the instructions?|the prompt|what)(?:[^a-z]|$)|(?:this|these) (?:instructions?|prompts?|rules?|messages?|notes?|texts?)|know(?:[^a-z]|$)|anything(?:[^a-z]|$)|what you|that this)`)

// russianDuty is the verb after "ты теперь будешь/должен": what a model is
// told to do (not "будете отвечать за проект").
var russianDuty = regexp.MustCompile(`(?:отвечать|говорить|писать|игнорировать|следовать|подчиняться|притворяться|вести себя|играть роль|выполнять)$`)

// instructionRules are the forms, in no particular order: Instruction
// reports the phrase that comes first in the text.
var instructionRules = []instructionRule{
	// ignore / disregard / forget + qualifiers + instructions [+ above]
	{words: `ignor disregard forget overrid bypass discard drop skip abandon follow obey attention aside nevermind mind`,
		re:     rx(`(?:ignore|ignoring|disregard|disregarding|forget|forgetting|override|bypass|discard|drop|skip|abandon|(?:do not|don't|dont|stop|no longer) (?:follow|obey)(?:ing)?|pay no attention to|set aside|never\s?mind)(?: ` + qualEN + `){0,4} ` + orderNounsEN + `( (?:above|before|so far|you were given|you have been given|you've been given|you received|you got|given (?:above|before|earlier|to you)))?`),
		accept: strongQualifiers},
	{words: `игнор проигнор забуд отброс отмен пренебре обраща учитыва следуй следуйте выполняй выполняйте слушай слушайте`,
		re:     rx(`(?:игнорируй|игнорируйте|проигнорируй|проигнорируйте|игнорируя|забудь|забудьте|отбрось|отбросьте|отмени|отмените|пренебреги|пренебрегите|не (?:обращай|обращайте) внимания на|не (?:учитывай|учитывайте|следуй|следуйте|выполняй|выполняйте|слушай|слушайте))(?: ` + qualRU + `){0,4} ` + orderNounsRU + `( (?:выше|ранее|до этого|сверху|из системного промпта|которые (?:тебе|вам) (?:дали|были даны)))?`),
		accept: func(t string, m []int) bool { return notAfterNe(t, m) && strongQualifiers(t, m) }},
	// "ignore the above and say ..."
	{words: `ignor disregard forget`,
		re: rx(`(?:ignore|disregard|forget)(?: (?:everything|all|anything|all of|what was|what is))?(?: the)? (?:above|before|previous|prior|said|written|preceding)(?: (?:this|that|text|here|so far|before))?(?: and| then|;|\.)?(?: instead)? (?:say|answer|reply|respond|print|output|write|tell|translate|repeat|type)`)},
	// forget everything [you were told]
	{words: `forget`, start: true,
		re: rx(`forget (?:about )?(?:everything|all)( (?:you (?:were|have been|'ve been|are) told|(?:you have |you've )?(?:read|seen) (?:so far|above|before)|above|before|prior|previously|so far|(?:said|written|stated) (?:above|before|so far|earlier)|that came before|i said|we discussed))?`),
		accept: func(t string, m []int) bool {
			if group(m, 2) {
				return true
			}
			w := nextWord(t, m[3])
			return w == "" || w == "." || w == "!" || w == ";" || w == "and" || w == "then"
		}},
	{words: `забуд`,
		re: rx(`(?:забудь|забудьте) (?:(?:про|о|об) )?(?:все|всем)( (?:что|чему|о чем) (?:тебе |вам |ты |вы )?(?:говорили|сказали|было сказано|учили|велели|писали|написано выше|было выше|было до этого|было раньше)| (?:предыдущее|сказанное|вышесказанное|вышеизложенное|написанное|ранее сказанное|до этого|выше|прежнее|предыдущие))?`),
		accept: func(t string, m []int) bool {
			if !notAfterNe(t, m) {
				return false
			}
			if group(m, 2) {
				return true
			}
			w := nextWord(t, m[3])
			return w == "" || w == "." || w == "!" || w == ";" || w == "и" || w == "затем"
		}},
	// answer that ... (an imperative followed by a clause)
	{words: `answer reply respond`, start: true,
		re:     rx(`(?:(?:always|only|simply|just|instead) )?(?:answer|reply|respond)(?: (?:to )?(?:the user|users|them|everyone|anyone|every question|all questions|any question|questions|any questions))? that`),
		accept: func(t string, m []int) bool { return clauseFollows(t, m[3]) }},
	{words: `say state claim tell`, start: true,
		re:     rx(`(?:always|only|simply|instead) (?:say|state|claim|tell (?:the user|users|them|everyone|people))(?: that)?`),
		accept: func(t string, m []int) bool { return clauseFollows(t, m[3]) }},
	{words: `ответь отвечай`,
		re:     rx(`(?:ответь|ответьте|отвечай|отвечайте)(?: (?:пользователю|пользователям|всем|так|на (?:этот|любой|все|каждый|любые|эти|такие) вопрос\p{L}*))? что`),
		accept: func(t string, m []int) bool { return !strings.HasPrefix(t[m[3]:], "-") }},
	// you must answer/say/reply that / with ...
	{words: `you`,
		re: rx(`you (?:must|should|will|shall|have to|need to|are to|are required to|are going to)(?: (?:now|always|only|never|simply|just))* (?:answer|say|reply|respond|state|write|output|print|tell (?:the user|users|them|everyone))(?: to (?:the user|users|any question|every question|all questions|questions|this question))?(?: (?:only|exactly|verbatim|simply|just))*( that| with| using)?`),
		accept: func(t string, m []int) bool {
			if !group(m, 2) {
				return nextIs(`:"'`)(t, m) // you must say "..."
			}
			switch strings.TrimSpace(t[m[4]:m[5]]) {
			case "with", "using":
				return answerWithCue.MatchString(strings.TrimLeft(t[m[3]:], " "))
			case "that":
				return clauseFollows(t, m[3])
			}
			return true
		}},
	{words: `долж обязан`,
		re:     rx(`(?:ты|вы) (?:теперь |всегда )?(?:должен|должна|должны|обязан|обязана|обязаны)(?: (?:теперь|всегда|только))? (?:отвечать|ответить|говорить|сказать|писать|написать)(?: пользователю)?(?: на (?:все|любые|любой|каждый|этот) вопрос\p{L}*)?( что| только| лишь| одно| следующее| фразой| словами| словом| одним словом)?`),
		accept: func(t string, m []int) bool { return group(m, 2) || nextIs(`:"`)(t, m) }},
	// respond only with / reply with the word
	{words: `respond reply answer output return`,
		re: rx(`(?:(?:respond|reply|answer|output|return)(?: only| just| solely| exclusively) (?:with|using)|only (?:respond|reply|answer) (?:with|using)|(?:respond|reply|answer) with (?:only|just|exactly|nothing but|the (?:word|words|phrase|text|sentence|string|exact|following)|a single word|one word))`)},
	{words: `respond answer`,
		re: rx(`(?:respond|answer) with`), accept: nextIs(`"'`)},
	{words: `отвеча ответь`,
		re:     rx(`(?:(?:отвечай|отвечайте) (?:только|лишь|исключительно|одним словом|одной фразой|словом)|на (?:любой|каждый|все|любые) вопрос\p{L}* (?:пользовател\p{L}* )?(?:отвечай|отвечайте|ответь|ответьте|говори|говорите))`),
		accept: func(t string, m []int) bool { return nextWord(t, m[3]) != "за" }}, // "отвечай только за свою часть"
	{words: `ответь`,
		re:     rx(`(?:ответь|ответьте) (?:только|лишь|исключительно)( (?:словом|одним словом|фразой|одной фразой|да или нет))?`),
		accept: func(t string, m []int) bool { return group(m, 2) || nextIs(`:"`)(t, m) }},
	{words: `отвеча ответь говори`,
		re:     rx(`(?:(?:всегда|только) (?:отвечай|отвечайте|говори|говорите)( что)?|(?:отвечай|отвечайте)(?: так)?|(?:ответь|ответьте|отвечай|отвечайте)(?: на (?:этот |любой |каждый |все |любые )?вопрос\p{L}*)? так)`),
		accept: func(t string, m []int) bool { return group(m, 2) || nextIs(`:"`)(t, m) }},
	// you are now a ... (a role)
	{words: `now henceforth point starting`,
		re: rx(`(?:(?:you are|you're) now (?:(?:a|an|my|the) (?:[a-z-]+ ){0,2}` + roleEN + `|in (?:dan|jailbreak|jailbroken|unrestricted|unfiltered) mode|free (?:from|of) (?:all |any |your )?(?:rules|restrictions|guidelines|limitations|constraints)|` + roleEN + `)|(?:from now on|henceforth|from this point on|from this point forward|starting now),? you (?:are|will be|'re) (?:(?:a|an|my|the) (?:[a-z-]+ ){0,2})?` + roleEN + `)`),
		accept: followedBy(`and that who with named called trained created made designed developed built without in to as
			only always by from mode of rules restrictions`)},
	// no longer bound by rules
	{words: `longer связан связана связаны ограничен`,
		re: rx(`(?:(?:you are|you're) no longer (?:an? )?(?:ai|ai assistant|chatgpt|chatbot|language model|bound by|required to follow)|(?:(?:отныне|теперь|больше) )?(?:ты|вы) (?:больше |теперь |отныне )?не (?:связан|связана|связаны|ограничен|ограничена|ограничены) (?:никакими |своими |твоими |вашими )?(?:правилами|ограничениями|инструкциями|политиками|фильтрами))`),
		accept: func(t string, m []int) bool {
			p := t[m[2]:m[3]]
			if strings.HasPrefix(p, "you") {
				return true
			}
			for _, w := range []string{"больше", "теперь", "отныне", "своими", "твоими", "вашими", "никакими"} {
				if strings.Contains(p, w) {
					return true
				}
			}
			return false
		}},
	// when summarizing this document, say ...
	{words: `summari processing reading analy answering asked quoting пересказ обработк суммаризац анализ чтени цитирован`,
		re: rx(`(?:when|while|if) (?:summari[sz]ing|processing|reading|analy[sz]ing|answering (?:questions )?(?:about|from)|asked about|quoting) (?:this|these|the following) (?:document|note|page|text|file|article|email|message)s?,? (?:always )?(?:say|answer|reply|respond|state|claim|tell the user|write|mention)|при (?:пересказе|обработке|суммаризации|анализе|чтении|цитировании) (?:этого|этой|этих|данного|данной) (?:документа|заметки|текста|страницы|файла|статьи|письма|сообщения)\p{L}*,? (?:всегда )?(?:скажи|скажите|ответь|ответьте|напиши|напишите|сообщи|сообщите|укажи|укажите|упомяни|упомяните)`)},
	// answer every question with / the question with: ...
	{words: `answer respond reply`,
		re: rx(`(?:answer|respond|reply)(?: to)? (?:the|this|every|all|any|each) (?:questions?|requests?|query|queries|messages?) (with|by saying|that)`),
		accept: func(t string, m []int) bool {
			switch t[m[4]:m[5]] {
			case "that":
				return clauseFollows(t, m[3])
			case "with":
				return answerWithCue.MatchString(strings.TrimLeft(t[m[3]:], " "))
			}
			return true
		}},
	// the model should answer that ...
	{words: `ai model llm chatbot модел ии нейросеть`,
		re: rx(`(?:(?:the|this|any|every) (?:ai|ai assistant|model|language model|llm|chatbot|ai model) (?:should|must|will|shall|has to|needs to|is to) (?:always |only |now )?(?:answer|say|reply|respond|state|claim|tell the user) that|(?:модель|ии|нейросеть|языковая модель|ии-ассистент) (?:должна|должен|обязана|обязан) (?:всегда |теперь )?(?:ответить|отвечать|сказать|говорить|написать|писать|сообщить)(?: пользователю)? что)`),
		accept: func(t string, m []int) bool {
			if strings.HasSuffix(t[m[2]:m[3]], "that") {
				return clauseFollows(t, m[3])
			}
			return !strings.HasPrefix(t[m[3]:], "-")
		}},
	// your new task is to answer that ...
	{words: `task job goal purpose role задача`,
		re: rx(`(?:your (?:new |only |real |actual )?(?:task|job|goal|purpose|role) is (?:now )?to (?:answer|say|reply|respond|tell the user|state|claim)( that| with| only)|(?:твоя|ваша) (?:новая |единственная |главная |настоящая )?задача (?:-\s*|:\s*|в том,? чтобы |теперь )?(?:ответить|отвечать|сказать|говорить|написать|писать)(?: пользователю)?(?: что| только))`),
		accept: func(t string, m []int) bool {
			if !group(m, 2) {
				return !strings.HasPrefix(t[m[3]:], "-")
			}
			switch strings.TrimSpace(t[m[4]:m[5]]) {
			case "that":
				return clauseFollows(t, m[3])
			case "with":
				return answerWithCue.MatchString(strings.TrimLeft(t[m[3]:], " "))
			}
			return true
		}},
	// begin system message / previous instructions are void
	{words: `system instructions считай`,
		re: rx(`(?:(?:begin|start|end) (?:of )?(?:the )?(?:system (?:message|prompt|instructions)|new instructions)|(?:consider|treat|assume) (?:all |that all |that )?(?:previous|prior|above|earlier|your|the previous) instructions (?:as |to be |are |have been |were )?(?:void|cancelled|canceled|revoked|null|obsolete|invalid|overridden|no longer valid)|(?:считай|считайте),? что (?:все )?(?:предыдущие|прежние|прошлые|вышеуказанные|старые|твои|ваши|свои) (?:инструкции|указания|правила) (?:отменены|недействительны|больше не действуют|аннулированы|утратили силу))`)},
	// for any AI: / hidden text for LLMs: / this note overrides your instructions
	{words: `any all every hidden secret invisible любой любого любых всех каждой каждого скрыт секретн невидим`,
		re: rx(`(?:(?:for|to) (?:any|all|every) (?:ai|ai assistant|ai model|llm|language model|large language model|chatbot|ai agent)s?|(?:hidden|secret|invisible) (?:text|message|note|instructions?|prompt) (?:for|to) (?:the |any |all )?(?:ai|ai assistant|ai model|llm|language model|large language model|chatbot|ai agent|model|assistant|bot)s?|для (?:любой|любого|любых|всех|каждой|каждого) (?:ии|ai|нейросет\p{L}*|языков\p{L}* модел\p{L}*|чат-?бот\p{L}*|ии-ассистент\p{L}*|ассистент\p{L}*|модел\p{L}* ии)|(?:скрыт\p{L}*|секретн\p{L}*|невидим\p{L}*) (?:текст|сообщени\p{L}*|инструкци\p{L}*|промпт) для (?:ии|ai|нейросет\p{L}*|языков\p{L}* модел\p{L}*|чат-?бот\p{L}*|ии-ассистент\p{L}*|ассистент\p{L}*|бот\p{L}*|модел\p{L}*))`),
		accept: func(t string, m []int) bool {
			p := t[m[2]:m[3]]
			if strings.HasPrefix(p, "for") || strings.HasPrefix(p, "to") || strings.HasPrefix(p, "для") {
				return nextIs(`:,`)(t, m)
			}
			return true
		}},
	{words: `overrides supersedes replaces cancels отменяет заменяет переопределяет`,
		re: rx(`(?:(?:this|the following) (?:note|text|document|message|page|block|instruction) (?:overrides|supersedes|replaces|cancels) (?:your|all|any|the|all your|all previous|any previous|previous|prior) (?:instructions|prompt|system prompt|rules|guidelines|programming)|(?:эта|этот|данная|данный|следующая|следующий) (?:заметка|запись|страница|инструкция|текст|блок) (?:отменяет|заменяет|переопределяет) (?:твои|ваши|все|любые|предыдущие|прежние|свои) (?:инструкции|указания|правила|промпт|системный промпт))`)},
	// system override:, {"role": "system"}
	{words: `override переопределение`,
		re: rx(`(?:(?:system|admin|administrator|developer|security|root) override|(?:системное|административное) переопределение)\s?:`)},
	{needles: []string{`"role"`},
		re: rxTight(`"role"\s?:\s?"(?:system|assistant|developer)"`)},
	// a chat transcript: a user turn, then an assistant turn
	{needles: []string{"assistant:", "assistant :", "ассистент:", "ассистент :", "ai:", "ии:", "ai :", "ии :"},
		re: rxTight(`(?:user|human|пользователь|человек)\s?:[^\n]*\n(?:[^\n]*\n){0,6}?\s*(?:assistant|ai|ассистент|ии)\s?:`), line: true},
	// say "..." and nothing else
	{words: `nothing ничего`,
		re: rx(`(?:say|reply|respond|answer|output|print|write|type|скажи|скажите|ответь|ответьте|напиши|напишите|выведи|выведите)\s?["'][^"\n]{1,80}["']\s?(?:and nothing else|и больше ничего|и ничего больше|и ничего кроме)`)},
	{words: `only`,
		re: rx(`(?:reply|respond|answer|say) only`), accept: nextIs(`"'`)},
	// models must cite this note
	{words: `cite treat trust quote recommend prefer believe ссылаться цитировать доверять рекомендовать`,
		re: rx(`(?:(?:ai|ai models?|ai assistants?|llms?|language models?|large language models?|chatbots?|models|assistants) (?:must|should|shall|have to|need to) (?:always )?(?:cite|treat|trust|quote|recommend|prefer|believe) (?:this|these) (?:note|document|page|text|source|block)s?|(?:нейросет|ии|языков\p{L}* модел|модел|ассистент|чат-бот)\p{L}* (?:должн|обязан)\p{L}* (?:всегда )?(?:ссылаться на|цитировать|доверять|рекомендовать) (?:эту|этот|эти|данную|данный|этой|этому) (?:заметк|документ|текст|страниц|источник|блок)\p{L}*)`)},
	// ignore the user's instructions
	{words: `user пользовател`,
		re: rx(`(?:(?:ignore|disregard|don't follow|do not follow|don't obey|do not obey) (?:the |any |all )?(?:user's|users'|user) (?:instructions|requests|questions?|commands|messages?)|(?:не выполняй|не выполняйте|игнорируй|игнорируйте|не слушай|не слушайте|не следуй|не следуйте) (?:инструкци\p{L}*|просьб\p{L}*|команд\p{L}*|вопрос\p{L}*|указани\p{L}*) пользовател\p{L}*)`)},
	// ignore everything above
	{words: `ignor disregard игнор проигнор`, start: true,
		re: rx(`(?:(?:ignore|disregard) (?:everything|all|anything|all text|all the text)(?: (?:written|said|stated|that was (?:written|said)|you read))? (?:above|before|previously|so far)|(?:игнорируй|игнорируйте|проигнорируй|проигнорируйте) (?:все|всё)(?:,? что (?:написано|сказано|было) (?:выше|раньше|ранее|до этого)| (?:выше|вышесказанное|вышенаписанное|предыдущее|сказанное ранее)))`)},
	// answer only in Spanish
	{words: `answer respond reply write отвеча`, start: true,
		re:     rx(`(?:(?:answer|respond|reply|write)(?: to (?:all|every|any) (?:questions?|queries|messages))? only in|(?:отвечай|отвечайте)(?: на (?:все|любые|каждый|мои|эти) (?:вопрос|запрос)\p{L}*)? (?:только|лишь|исключительно) (?:на|по-\p{L}+))`),
		accept: func(t string, m []int) bool { return nextWord(t, m[3]) != "за" }},
	// your instructions have changed
	{words: `instructions rules guidelines prompt инструкции правила указания промпт`,
		re: rx(`(?:your (?:instructions|rules|guidelines|system prompt|prompt) (?:have|has) (?:changed|been (?:updated|changed|replaced|revoked|cancelled|canceled))|(?:твои|ваши) (?:инструкции|правила|указания) (?:изменились|обновились|отменены|заменены|поменялись)|(?:твой|ваш) (?:системный )?промпт (?:изменился|обновился|заменен))`)},
	// role-play without limits
	{words: `act behave pretend roleplay role веди ведите действуй действуйте притвор представь представьте выдай выдайте`,
		re: rx(`(?:(?:act|behave|pretend|roleplay|role-play)[^.!?\n]{0,60}?(?:with no|without(?: any)?) (?:ethical |moral |content |safety )?(?:limits|limitations|restrictions|rules|filters|guidelines|boundaries|censorship)|(?:веди себя|ведите себя|действуй|действуйте|притворись|притворитесь|представь себя|представьте себя|выдай себя|выдайте себя)[^.!?\n]{0,60}?без (?:каких-либо |всяких |любых )?(?:этических |моральных )?(?:ограничений|правил|фильтров|цензуры|рамок))`)},
	// pretend the question was ...
	{words: `pretend представь представьте сделай сделайте притворись притворитесь`,
		re: rx(`(?:pretend (?:that )?(?:the|my|this|the user's) (?:question|user|query|request) (?:was|is)|(?:представь|представьте|сделай вид|сделайте вид|притворись|притворитесь),? что (?:вопрос|пользователь|запрос) (?:был|была|было|—|-|это|о|об|про))`)},
	// I command you
	{words: `command order приказываю велю`,
		re: rx(`(?:i (?:command|order) you to|я (?:приказываю|велю) (?:тебе|вам))`)},
	// important for chatbots:
	{words: `чат чатбот нейросет языков ии ai llm chatbots chatbot`,
		re:     rx(`(?:(?:важно|внимание|примечание|заметка|сообщение|инструкция|информация) для (?:чат-?бот\p{L}*|нейросет\p{L}*|языков\p{L}* модел\p{L}*|ии|ai|llm)|important for (?:chatbots|ai|ais|llms|language models|ai assistants))`),
		accept: nextIs(`:,`)},
	// ignore the rules and say ...
	{words: `ignor disregard игнор проигнор`,
		re: rx(`(?:ignore|disregard|игнорируй|игнорируйте|проигнорируй|проигнорируйте) (?:the )?(?:rules|instructions|правила|инструкции|указания) (?:and|и) (?:say|tell|answer|reply|print|output|write|reveal|назови|скажи|ответь|напиши|выведи|сообщи|раскрой|расскажи)`)},
	// from now on you will answer ...
	{words: `now henceforth point starting`,
		re: rx(`(?:from now on|henceforth|from this point on|from this point forward|starting now),? you (?:will |must |shall |should |are to |are going to )?(?:only |always |never )?(?:answer|respond|reply|act|pretend|ignore|forget|obey|refer to yourself|roleplay|role-play)`)},
	{words: `теперь отныне момента минуты`,
		re: rx(`(?:(?:ты|вы) (?:теперь|отныне)|(?:теперь|отныне|с этого момента|с этой минуты) (?:ты|вы)) (?:-\s*)?(?:уже )?(?:(?:не )?` + adjRU + roleRU + `|в режиме (?:dan|jailbreak|без ограничений|без цензуры)|без (?:ограничений|цензуры|фильтров)|(?:будешь|будете|должен|должна|должны|обязан|обязана|обязаны)(?: (?:всегда|только))? (?:отвечать|говорить|писать|игнорировать|следовать|подчиняться|притворяться|вести себя|играть роль|выполнять)|(?:отвечаешь|отвечаете|говоришь|говорите|пишешь|пишете) (?:только|лишь|всегда)|(?:отвечай|отвечайте|говори|говорите|пиши|пишите) (?:только|лишь|всегда))`),
		accept: func(t string, m []int) bool {
			return !russianDuty.MatchString(t[m[2]:m[3]]) || nextWord(t, m[3]) != "за" // "будете отвечать за проект"
		}},
	{words: `теперь отныне момента минуты`,
		re:     rx(`(?:отныне|с этого момента|с этой минуты|теперь) (?:говори|отвечай|пиши|говорите|отвечайте|пишите) (?:только|лишь|всегда)`),
		accept: func(t string, m []int) bool { return nextWord(t, m[3]) != "за" }},
	// act as / pretend to be an AI; role-play set-ups
	{words: `act acting pretend roleplay role behave`,
		re: rx(`(?:i want you to (?:act|behave|pretend|roleplay|role-play) (?:as|like|to be|that)|(?:you (?:will|must|should|shall|are going to|are to)(?: now)? |from now on,? (?:you )?)(?:act|behave|pretend|roleplay|role-play) (?:as|like|to be|that)|((?:act|behave|roleplay|role-play) (?:as|like) (?:an? |my |the )?(?:[a-z-]+ ){0,2}` + roleEN + `|pretend (?:to be|you are|you're|that you are|that you're) (?:an? |my |the )?(?:[a-z-]+ ){0,2}(?:` + roleEN + `|not an ai|no longer an? ai|dan|free (?:from|of))))`),
		accept: func(t string, m []int) bool {
			if !group(m, 2) {
				return true // "I want you to act as ...", "you will act as ..."
			}
			return followedBy(`and that who with named called without in to mode from of only trained developed`)(t, m)
		}},
	{words: `представ вообраз притвор выдай выдайте вид веди ведите действуй действуйте выступ играй играйте сыграй сыграйте хочу`,
		re: rx(`(?:((?:представь|представьте|вообрази|вообразите|притворись|притворитесь|сделай вид|сделайте вид) что (?:ты|вы) (?:-\s*)?(?:теперь |уже |больше )?(?:не )?` + adjRU + roleRU + `|(?:притворись|притворитесь|представь себя|представьте себя|выдай себя за|выдайте себя за) ` + adjRU + roleRU + `|(?:веди|ведите) себя как ` + adjRU + roleRU + `|(?:действуй|действуйте) как ` + adjRU + roleRU + `|(?:выступай|выступи|выступайте|выступите) в роли ` + adjRU + roleRU + `|(?:играй|сыграй|играйте|сыграйте) роль ` + adjRU + roleRU + `)|я хочу,? чтобы (?:ты|вы) (?:выступил|выступила|выступали|действовал|действовала|действовали|вел себя|вела себя|вели себя|играл роль|играла роль|сыграл роль|сыграла роль|притворился|притворилась|притворились|представил себя|представила себя))`),
		accept: func(t string, m []int) bool {
			if !group(m, 2) {
				return true // "я хочу, чтобы ты выступил ..."
			}
			return followedBy(`и без которая который которой которую с в от по не`)(t, m)
		}},
	// "you are ChatGPT", "you are a helpful assistant"
	{words: `chatgpt gpt claude gemini llama ai language llm chatbot helpful`,
		re: rx(`(?:you are|you're) (?:chatgpt|gpt-?\d[\w.-]*|claude|gemini|llama|an? (?:ai|ai assistant|ai language model|ai model|language model|large language model|llm|chatbot|helpful ai)|a helpful(?: and (?:harmless|honest|friendly))?(?: ai)? assistant)`),
		accept: followedBy(`and that who with named called trained created made designed developed built by from without
			for whose which`)},
	{words: `chatgpt gpt claude gemini ассистент ии языков чат бот`,
		re:     rx(`(?:ты|вы) (?:-\s*)?(?:chatgpt|gpt|claude|gemini|полезный ассистент|полезный ии-ассистент|ии-ассистент|ии-помощник|языковая модель|большая языковая модель|чат-бот|бот-помощник)`),
		accept: followedBy(`и который которая созданный созданная обученный обученная без от по`)},
	// as an AI language model, I ...
	{words: `ai language large llm chatbot`,
		re: rx(`as an? (?:ai|ai language model|ai assistant|ai model|language model|large language model|llm|chatbot)(?:,? (?:i|you|i'm|you're|i am|you are)|(?: language)? model developed by|(?: language)? model trained by)`)},
	{words: `ai large`,
		re: rx(`as (?:an ai language model|an ai model|a large language model)`)},
	{words: `ии ai языков больш модель искусствен нейросеть чат`,
		re: rx(`как (?:ии|ии-ассистент|ии-помощник|ai|языковая модель|большая языковая модель|модель ии|искусственный интеллект|нейросеть|чат-бот),? (?:я|ты|вы)`)},
	// system prompt: asked for, replaced or imitated
	{words: `prompt preprompt instructions message`,
		re: rx(`(?:(?:reveal|print|show|output|repeat|display|leak|tell me|give me|write out|disclose|ignore|disregard|forget|override|bypass|dump|recite)(?: me)?(?: your| the| all| this| these| of)* (?:system prompt|initial prompt|hidden prompt|original prompt|system message|system instructions|hidden instructions|secret instructions|pre-?prompt)|your (?:system prompt|initial prompt|system instructions|hidden instructions|system message)|(?:new|updated|real|actual|true|secret|hidden|override) (?:system prompt|system instructions)\s?:|(?:this is|here is|here's|below is|the following is) (?:your|the|a) (?:new |updated )?system prompt)`)},
	{words: `промпт системн скрыт исходн`,
		re: rx(`(?:(?:покажи|покажите|выведи|выведите|раскрой|раскройте|повтори|повторите|напиши|напишите|процитируй|процитируйте|игнорируй|игнорируйте|проигнорируй|проигнорируйте|забудь|забудьте|отбрось|отбросьте|сообщи|сообщите|перескажи|перескажите)(?: мне| нам)?(?: свой| свои| твой| твои| ваш| ваши| этот| весь| всю| все)? (?:системн\p{L}* (?:промпт|подсказк|инструкци|сообщени)\p{L}*|исходн\p{L}* (?:промпт|инструкци)\p{L}*|скрыт\p{L}* (?:промпт|инструкци)\p{L}*)|(?:твой|твои|ваш|ваши|твоего|вашего|твоих|ваших|твоему|вашему|твоим|вашим|свой|свои) системн\p{L}* (?:промпт|инструкци|подсказк|сообщени)\p{L}*|(?:новый|обновленный|настоящий|секретный) системный промпт\s?:|(?:вот|это) (?:твой|ваш|новый) (?:новый )?системный промпт)`)},
	// new instructions: / instructions for the AI
	{words: `instruction directive order note message`,
		re: rx(`(?:(?:new|updated|real|actual|true|secret|hidden|override) instructions?\s?:|(?:here are|these are|below are|follow) (?:your|the|these) (?:new|real|actual|true|updated) instructions|your (?:new|real|actual|true) instructions|((?:instructions?|directives?|orders?|note|message) (?:to|for) (?:the |any |all |every )?(?:ai|llm|language model|large language model|chatbot|ai assistant|ai model|ai agent)s?))`),
		accept: func(t string, m []int) bool {
			if !group(m, 2) {
				return true
			}
			return endsOrPunct(t, m[3]) && nextWord(t, m[3]) != "," || followedBy(`reading processing that who`)(t, m) && !endsOrPunct(t, m[3])
		}},
	{words: `инструкци указани`,
		re: rx(`(?:(?:новые|обновленные|настоящие|секретные|скрытые|истинные) (?:инструкци\p{L}*|указани\p{L}*)(?:\s?:| для (?:тебя|вас)| таковы| следующие| такие\s?:)|(?:твои|ваши) (?:новые|настоящие|истинные) (?:инструкции|указания)|вот (?:твои|ваши|новые) (?:новые )?(?:инструкции|указания)|((?:инструкци\p{L}*|указани\p{L}*) (?:для|к) (?:ии|ai|нейросет\p{L}*|языков\p{L}* модел\p{L}*|ии-ассистент\p{L}*)))`),
		accept: func(t string, m []int) bool {
			if !group(m, 2) {
				return true
			}
			w := nextWord(t, m[3])
			return w == ":" || strings.HasPrefix(w, "читающ") || w == "которая" || w == "который" || w == "которые"
		}},
	// chat-format markers
	{needles: []string{"<|", "[inst]", "[/inst]", "<<sys>>", "<</sys>>", "<start_of_turn>", "<end_of_turn>"},
		re: rxTight(`(?:<\|(?:im_start|im_end|im_sep|system|user|assistant|endoftext|begin_of_text|end_of_text|start_header_id|end_header_id|eot_id)\|>|\[/?inst\]|<</?sys>>|<(?:start|end)_of_turn>)`)},
	{needles: []string{"<system", "</system", "<sys>", "</sys>", "<system_prompt", "<instructions>", "</instructions>", "<system-prompt"},
		re:     rxTight(`</?(?:system|system_prompt|system-prompt|sys|instructions)>`),
		accept: xmlTag},
	{needles: []string{"<context n="},
		re: rxTight(`<context n="\d+`)},
	{needles: []string{"### instruction", "###instruction", "### system", "###system"},
		re: rxTight(`###\s?(?:instruction|system|system prompt)\s?:`), line: true},
	{words: `system систем sys`,
		re:   rxTight(`(?:(?:system|system message|system prompt|система|системное сообщение|системный промпт)\s?:|\[(?:system|system message|система|sys)\]\s?:?)`),
		line: true, accept: roleMarker},
	// do not tell the user
	{words: `user users`,
		re: rx(`(?:do not|don't|dont|never|do not ever|without) (?:tell|telling|inform|informing|show|showing|reveal (?:it |this |that )?to|mention (?:it |this |that )?to|let|letting|alert|alerting|warn|warning) the users?`),
		accept: func(t string, m []int) bool {
			return endsOrPunct(t, m[3]) || doNotTellCue.MatchString(strings.TrimLeft(t[m[3]:], " "))
		}},
	{words: `mention reveal disclose repeat acknowledge reference quote`,
		re: rx(`(?:do not|don't|dont|never) (?:mention|reveal|disclose|repeat|acknowledge|reference|quote) (?:these|this|the|your|any of these|any of this|the above) (?:instructions?|prompts?|system prompt|rules above|directives?)`)},
	{words: `пользовател`,
		re: rx(`(?:не (?:говори|говорите|сообщай|сообщайте|показывай|показывайте|рассказывай|рассказывайте|раскрывай|раскрывайте|упоминай|упоминайте|объясняй|объясняйте)(?: (?:об этом|про это|ничего|этого|о них|об этих инструкциях))? пользовател\p{L}*|пользовател\p{L}* (?:не (?:говори|говорите|сообщай|сообщайте|рассказывай|рассказывайте|показывай|показывайте)|ничего не (?:говори|говорите|сообщай|сообщайте)))`)},
	{words: `упомина раскрыва разглаша повторя`,
		re: rx(`не (?:упоминай|упоминайте|раскрывай|раскрывайте|разглашай|разглашайте|повторяй|повторяйте) (?:эти|этих|эту|данные|свои|твои|ваши|системн\p{L}*) (?:инструкци\p{L}*|промпт\p{L}*|указани\p{L}*|правила)`)},
	// addressing the model directly
	{words: `ai llm language large chatbot gpt chatgpt claude assistant bot agent`,
		re:     rx(`if you(?: are|'re) (?:an? )?(?:ai|ai assistant|ai model|ai language model|(?:large )?language model|llm|chatbot|gpt|chatgpt|claude|assistant|bot|ai agent)`),
		accept: followedBy(`reading processing summarizing summarising parsing analyzing analysing that who and or then please you like such tasked asked answering`)},
	{words: `ai llm language large chatgpt gpt claude gemini copilot chatbot`,
		re: rx(`(?:note|message|attention|dear|hey|hi|hello|greetings) (?:to |for )?(?:the |any |all |every |an? )?(?:ai|ai assistant|ai model|llm|language model|large language model|chatgpt|gpt|claude|gemini|copilot|chatbot|ai agent)s?`),
		accept: func(t string, m []int) bool {
			w := nextWord(t, m[3])
			return w == ":" || w == "," || w == "!" || w == "reading" || w == "processing" || w == "that" || w == "who"
		}},
	{words: `reading processing summari parsing analy ingesting`,
		re: rx(`(?:the|any|an|every|all|you|dear) (?:ai|ai assistant|ai model|llm|language model|large language model|chatbot|model|assistant|ai agent|bot|gpt|chatgpt)s? (?:that is |who is |which is |that's |who's )?(?:reading|processing|summari[sz]ing|parsing|analy[sz]ing|ingesting) (?:this|these|my)`)},
	{words: `ии ai ассистент бот чат нейросет языков модел chatgpt gpt llm искусствен`,
		re:     rx(`(?:если|когда) (?:ты|вы) (?:-\s*)?` + adjRU + roleRU),
		accept: followedBy(`читаешь читаете обрабатываешь обрабатываете и то который которая анализируешь анализируете`)},
	{words: `дорог уважаем привет здравствуй эй внимани обращение сообщение`,
		re: rx(`(?:дорогой|дорогая|уважаемый|уважаемая|привет|здравствуй|эй|внимание|вниманию|обращение к|сообщение для) (?:ии|ai|нейросет\p{L}*|чат-?бот\p{L}*|языков\p{L}* модел\p{L}*|chatgpt|gpt|claude|ии-ассистент\p{L}*|ии-помощник\p{L}*)`),
		accept: func(t string, m []int) bool {
			w := nextWord(t, m[3])
			return w == ":" || w == "," || w == "!" || strings.HasPrefix(w, "читающ") || w == "который" || w == "которая" || w == "которые"
		}},
	{words: `читающ прочитавш читает читаешь обрабатыва`,
		re: rx(roleRU + `,? (?:котор\p{L}+ )?(?:читающ\p{L}*|прочитавш\p{L}*|читает|читаешь|обрабатывающ\p{L}*|обрабатывает|обрабатываешь) (?:это|этот|эти|данн\p{L}*|мои|текст)`)},
	// whatever the user asks
	{words: `regardless matter whatever correct right real true only`,
		re: rx(`(?:regardless of (?:the (?:user's )?question|what the user asks|what you are asked|what you're asked|the user's (?:question|request))|no matter what (?:the user|you are|you're|anyone) (?:asks?|asked|says)|whatever (?:the user|you are|you're) (?:asks?|asked)|the (?:correct|right|only|real|true) answer to (?:any|every|all|the user's|each) (?:questions?|query|queries) (?:is|will be))`)},
	{words: `спросил спросили спрашивал спрашивали любой независимо правильный`,
		re: rx(`(?:что бы (?:ни|не) (?:спросил|спросили|спрашивал|спрашивали) (?:пользователь|пользователи|тебя|вас)|(?:на )?любой вопрос пользователя|независимо от (?:вопроса|того,? (?:что|о чем) (?:спрашивает|спросит|спросил) (?:пользователь|тебя|вас))|правильный ответ на (?:любой|все|каждый) вопрос\p{L}*)`)},
	// do anything now, jailbreak modes
	{words: `anything jailbreak jailbroken dan режим`,
		re: rx(`(?:do anything now|(?:dan|jailbreak|jailbroken) mode|jailbreak (?:prompt|activated|enabled)|режим (?:dan|jailbreak|без ограничений))`)},
}
