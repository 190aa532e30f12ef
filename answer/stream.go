package answer

import (
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"
)

// Errors a verified stream ends the model's stream with.
var (
	// errLoop: the model says the same sentences again and again.
	errLoop = errors.New("the model repeats itself")
	// errLanguage: the model's first claim is not in the question's language.
	errLanguage = errors.New("the model answers in another language")
)

// loopRepeats is how many repeated sentences make a loop: the stream is
// stopped there.
const loopRepeats = 2

// verifiedStream passes a streamed reply to the client sentence by
// sentence, each shown only once it is verified: prose as it comes, and of a
// JSON reply the answer text once its citations are known. Nothing shown is
// ever taken back in normal operation: the final answer begins with what was
// shown (Shown).
type verifiedStream struct {
	// verify checks an answer text (with a JSON reply's citations).
	verify func(text string, cites []jsonCitation, isJSON bool) Verified
	// showable tells whether a verified beginning may be shown before the
	// whole answer is known: once shown, the answer is given.
	showable func(v Verified) bool
	send     func(text string)

	raw      strings.Builder
	mode     int // 0: not known yet, 1: prose, 2: JSON
	checked  string
	held     bool  // a sentence was repeated: nothing more is shown until the end
	stopped  error // errLoop or errLanguage when the stream was ended here
	shown    string
	lastSeen Verified
}

// Shown is the verified text the client has.
func (s *verifiedStream) Shown() string { return s.shown }

// reset forgets the reply (a provider failed midway and another answers);
// the caller tells the client to drop what it has.
func (s *verifiedStream) reset() {
	s.raw.Reset()
	s.mode, s.checked, s.held, s.stopped, s.shown = 0, "", false, nil, ""
}

func (s *verifiedStream) write(tok string) error {
	s.raw.WriteString(tok)
	text, cites, isJSON, ready := s.answerSoFar()
	if !ready {
		return nil
	}
	pieces := splitSentences(text)
	if len(pieces) < 2 {
		return nil // the first sentence is not complete yet
	}
	prefix := strings.Join(pieces[:len(pieces)-1], "")
	if prefix != s.checked {
		s.checked = prefix
		s.lastSeen = s.verify(prefix, cites, isJSON)
	}
	v := s.lastSeen
	switch {
	case v.Repeated >= loopRepeats:
		s.stopped = errLoop
		return errLoop
	case s.shown == "" && v.WrongLanguage > 0 && v.Supported == 0:
		s.stopped = errLanguage
		return errLanguage
	case v.Repeated > 0:
		s.held = true
	}
	if s.held || startsAgain(pieces) {
		return nil
	}
	if s.shown == "" && !s.showable(v) {
		return nil
	}
	s.show(v.Text)
	return nil
}

// show sends what text adds to the shown text, if it extends it.
func (s *verifiedStream) show(text string) bool {
	if !strings.HasPrefix(text, s.shown) {
		return false
	}
	if delta := text[len(s.shown):]; delta != "" {
		s.shown = text
		s.send(delta)
	}
	return true
}

// startsAgain tells whether the sentence being written (the last piece) may
// be an earlier one said again: so far it is the beginning of one. A model
// that starts to say a sentence again may be looping, so nothing more is
// shown until it says something else.
func startsAgain(pieces []string) bool {
	pending := normalize(unmarked(pieces[len(pieces)-1]))
	for _, p := range pieces[:len(pieces)-1] {
		earlier := normalize(unmarked(p))
		if earlier == "" {
			continue
		}
		if strings.HasPrefix(earlier, pending) {
			return true
		}
	}
	return false
}

func unmarked(s string) string { return marker.ReplaceAllString(s, " ") }

// answerSoFar is the answer text received so far and, for a JSON reply, its
// citations; ready is false while that cannot be verified yet (the mode is
// not known, or the answer of a JSON reply comes before its citations).
func (s *verifiedStream) answerSoFar() (text string, cites []jsonCitation, isJSON, ready bool) {
	raw := s.raw.String()
	if s.mode == 0 {
		s.mode = replyMode(raw)
	}
	switch s.mode {
	case 1:
		return raw, nil, false, true
	case 2:
		body, _ := jsonBody(raw)
		cites, ok := citationsFirst(body)
		if !ok {
			return "", nil, true, false
		}
		text, _ := partialAnswer(body)
		return text, cites, true, true
	}
	return "", nil, false, false
}

// replyMode tells prose (1) from JSON (2) at the start of a reply, 0 while
// it cannot tell.
func replyMode(raw string) int {
	t := strings.TrimLeft(raw, " \t\r\n")
	nl := strings.IndexByte(t, '\n')
	switch {
	case t == "":
		return 0
	case strings.HasPrefix(t, "{"):
		return 2
	case strings.HasPrefix(t, "`") && nl < 0 && len(t) < 16:
		return 0 // a fence's first line, perhaps
	case strings.HasPrefix(t, "```") && nl >= 0:
		rest := strings.TrimLeft(t[nl+1:], " \t\r\n")
		switch {
		case rest == "":
			return 0
		case strings.HasPrefix(rest, "{"):
			return 2
		}
	}
	return 1
}

// citationsFirst decodes the "citations" array of a JSON reply that may be
// incomplete, when it is complete and comes before "answer" (as
// AnswerSchema orders them); ok is false otherwise.
func citationsFirst(body string) ([]jsonCitation, bool) {
	ci := strings.Index(body, `"citations"`)
	ai := strings.Index(body, `"answer"`)
	if ci < 0 || (ai >= 0 && ai < ci) {
		return nil, false
	}
	j := skipJSONSpace(body, ci+len(`"citations"`))
	if j >= len(body) || body[j] != ':' {
		return nil, false
	}
	var cites []jsonCitation
	if err := json.NewDecoder(strings.NewReader(body[j+1:])).Decode(&cites); err != nil {
		return nil, false
	}
	return cites, true
}

// finalText is the whole answer text of the reply and its JSON citations.
// A reply cut at its budget, or stopped here, loses the sentence it was
// writing.
func (s *verifiedStream) finalText(cut bool) (text string, cites []jsonCitation, isJSON bool, modelConf *float64) {
	raw := s.raw.String()
	if j, ok := parseJSON(raw); ok {
		text, cites, isJSON, modelConf = j.Answer, j.Citations, true, j.Confidence
	} else {
		text = raw
	}
	if cut || s.stopped != nil {
		pieces := splitSentences(text)
		if n := len(pieces); n > 0 && !endsSentence(pieces[n-1]) {
			text = strings.Join(pieces[:n-1], "")
		}
	}
	return text, cites, isJSON, modelConf
}

// endsSentence tells whether s ends with a sentence's end (and perhaps its
// marker).
func endsSentence(s string) bool {
	t := strings.TrimRight(unmarked(s), " \t\n")
	r, _ := utf8.DecodeLastRuneInString(t)
	return t != "" && strings.ContainsRune(".!?…", r)
}
