package retrieval

import "github.com/exocortex/exocortex/lang"

// langOf is the query's language: the one the client gave, else the
// question's (lang.DetectLang: it reads letters, not words, so it works for
// a question of one or two words too).
func langOf(given, question string) string {
	if given != "" {
		return given
	}
	return lang.DetectLang(question)
}
