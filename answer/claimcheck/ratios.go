package claimcheck

import (
	"regexp"
	"strings"
)

// KindRatio is a ratio or proportion ("1:2:2", "1 : 3"): Problem.Kind.
const KindRatio = "ratio"

// colonRun matches numbers joined by colons: a ratio or a time.
var colonRun = regexp.MustCompile(`\d+(?:[.,]\d+)?(?:\s?:\s?\d+(?:[.,]\d+)?)+`)

// ratios are the claim's ratios: numbers joined by colons, in order, where
// some part after the first is not two digits (so not a time: "02:00",
// "1:30", "10:15:00" are times, checked as such). The parts are compared as
// a whole: "1:2:5" is not stated by a block that writes "1:2:2" and a 5
// elsewhere, nor "2:1" by one that writes "1:2".
func ratios(text string) []string {
	var out []string
	for _, m := range colonRun.FindAllStringIndex(text, -1) {
		if m[0] > 0 && strings.ContainsAny(text[m[0]-1:m[0]], ":.,/-") || m[1] < len(text) && strings.ContainsAny(text[m[1]:m[1]+1], ":/-") {
			continue // part of a longer token: a date, a version, an address
		}
		parts := splitRatio(text[m[0]:m[1]])
		ratio := false
		for _, p := range parts[1:] {
			if len(p) != 2 {
				ratio = true
			}
		}
		if ratio {
			out = append(out, strings.Join(parts, ":"))
		}
	}
	return out
}

// evidenceRatios are every colon run of the evidence, normalised as
// ratios are (times included: a claim's ratio is compared with them all).
func evidenceRatios(text string) map[string]bool {
	out := map[string]bool{}
	for _, m := range colonRun.FindAllString(text, -1) {
		out[strings.Join(splitRatio(m), ":")] = true
	}
	return out
}

// splitRatio splits a colon run into its numbers, spaces dropped, a decimal
// comma as a point.
func splitRatio(s string) []string {
	parts := strings.Split(strings.ReplaceAll(s, " ", ""), ":")
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(p, ",", ".")
	}
	return parts
}

// missingRatios are the claim's ratios the evidence does not write.
func (e *Evidence) missingRatios(text string) []string {
	var out []string
	for _, r := range ratios(text) {
		if !e.ratios[r] {
			out = append(out, r)
		}
	}
	return out
}
