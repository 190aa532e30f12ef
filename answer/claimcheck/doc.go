// Package claimcheck decides whether a piece of evidence (a note block's own
// text) states what a claim says, beyond sharing its words. The answer
// verifier calls it for each claim and each block the claim cites; research
// reuses it for its facts.
//
// Check returns the Problems: the things the claim states that the evidence
// does not. Each rule is one small function:
//
//   - Numbers, dates, times, quantities, percentages, versions and money
//     (facts.go, units.go). Every one the claim writes must be in the
//     evidence, compared after normalising its form: "15 May 2024",
//     "May 15, 2024", "2024-05-15", "15.05.2024" and "15 мая 2024" are one
//     date (a claim's date without a year fits a block's date with one, not
//     the reverse); "1,000", "1 000" and "1000" one number; "30", "thirty"
//     and "тридцать" one number (cardinal words in both languages, every
//     Russian case, up to the thousands); "50%", "50 percent" and
//     "50 процентов" one percentage; "v3.1", "version 3.1" and "3.1" one
//     version; "$5", "5 USD" and "5 долларов" one amount; "02:00" and
//     "2:00 AM" one time, "02:03" another. A number with a unit (days, hours,
//     MB, files, блоков... in either language, every form of the word one
//     unit) needs the same number in the same unit, or the number written
//     alone in a block that names the unit ("5, 8 or 16 minutes"): "30 hours"
//     over a block's "30 days" fails. The number 1 written as a word ("one
//     of", "одна из") states no count. Citation markers ([1],
//     [20210808180117-abc1234]), links and block ids are taken out first:
//     their digits state nothing. Letters joined to digits ("S3", "x64",
//     "UTF-8") are identifiers, checked as names.
//   - Ratios (ratios.go): numbers joined by colons where a part after the
//     first is not two digits ("1:2:2", "1 : 3"; "02:00" and "1:30" are
//     times) must be written by the evidence as a whole, in order: "1:2:5"
//     fails over a block's "1:2:2" even when the block writes a 5 elsewhere,
//     and so does "2:1:2".
//   - Proper names (names.go): a word capitalised inside a sentence, a mixed
//     case word (SiYuan, iCloud), an acronym (API), a Latin word in a
//     Cyrillic claim, a word inside quotes (a UI label). Each must be in the
//     evidence in any case, by lemma, as the start of a longer word
//     (Sync/Synchronization) or, in Cyrillic, by a shared stem of four
//     letters or more (Москве/Москва). A capitalised word that opens a
//     sentence counts as a name only when it is missing from the evidence,
//     is not a common opener ("Users", "Click", "Нажмите") and the evidence
//     has a name of its own that the claim lacks: a swapped name ("Obsidian
//     stores..." over "SiYuan stores...").
//   - Limiting words (limiters.go): only, never, always, except, unless,
//     all/every/each, paid, free, must/required, at least, at most, and
//     только, лишь, никогда, всегда, кроме, все, каждый, платный,
//     бесплатный, обязательно, должен, не менее, не более... each map to a
//     concept shared by both languages (ONLY, NEVER, ALWAYS, EXCEPT, UNLESS,
//     ALL, PAID, FREE, MUST, AT_LEAST, AT_MOST). A concept the claim states
//     must be expressed by the evidence, in either language; the evidence
//     may use a weaker or wider word for it ("need to" for MUST,
//     "subscription" for PAID, "up to" for AT_MOST) that would not make a
//     claim state it. "not only", "at all", "все ещё", "кроме того", "free
//     up" limit nothing.
//   - Clauses (clauses.go): the claim is cut at ; — ( ), before "but",
//     "which", "unless", "но", "если", "который"... and before ", and",
//     ", а", ", и". When it has two clauses or more, each clause with n >= 3
//     content words (lemmas, stopwords aside; numbers and names are judged
//     above) needs max(2, ⌈n/2⌉) of them in the evidence, and one with 1 or 2
//     needs all: "X is true, and it also syncs to a server in Peru" fails on
//     its second clause. A single-clause claim is left to the verifier's
//     overlap rule.
//
// Connective fillers that say where a claim comes from ("According to the
// notes,", "The guide says that", "В заметках сказано:", "Согласно
// заметкам,") are taken off the claim first: they are no clause and carry no
// name.
//
// Options.CrossLanguage is for a claim in another language than its
// evidence (a Russian answer over an English note): clauses are not
// checked for shared words and names in the other script are not required,
// but numbers, dates, times, quantities, percentages, versions, money,
// limiting concepts and names in the evidence's own script still are.
//
// Check does not judge negation or polarity, nor the claim's overall word
// overlap: the verifier does both. Prepare reads a block once for checking
// many claims against it.
package claimcheck
