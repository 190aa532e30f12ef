package retrieval

import "github.com/exocortex/exocortex/lang"

// QuestionLang is the language of a question: "ru" when at least 30% of its
// letters are Cyrillic, "en" when most are Latin, "" otherwise (no letters,
// another script). It reads letters, not words, so it works for a question
// of one or two words too.
func QuestionLang(question string) string { return lang.DetectLang(question) }

// langOf is the query's language: the one the client gave, else the
// question's (QuestionLang).
func langOf(given, question string) string {
	if given != "" {
		return given
	}
	return QuestionLang(question)
}
