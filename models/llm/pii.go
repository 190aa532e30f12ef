package llm

import "regexp"

var (
	emailRe = regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}`)
	// Russian numbers: +7 912 345-67-89, 8 (912) 345 67 89, 89123456789.
	ruPhoneRe = regexp.MustCompile(`(?:\+7|\b8)[\s\-]?\(?\d{3}\)?[\s\-]?\d{3}[\s\-]?\d{2}[\s\-]?\d{2}\b`)
	// International numbers with a leading +: +44 20 7946 0958, +1 (415) 555-2671.
	intlPhoneRe = regexp.MustCompile(`\+\d{1,3}[\s\-]?(?:\(\d{1,4}\)|\d{1,4})(?:[\s\-]?\d{2,4}){2,4}\b`)
)

// MaskPII replaces e-mail addresses with "[email]" and phone numbers
// (international with a leading +, and Russian 8/+7 formats) with "[phone]".
func MaskPII(text string) string {
	text = emailRe.ReplaceAllString(text, "[email]")
	text = ruPhoneRe.ReplaceAllString(text, "[phone]")
	return intlPhoneRe.ReplaceAllString(text, "[phone]")
}
