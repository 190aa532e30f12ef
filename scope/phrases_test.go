package scope_test

import (
	"testing"
	"time"

	"github.com/exocortex/exocortex/scope"
)

var (
	moscow, _ = time.LoadLocation("Europe/Moscow")
	// now is Wednesday, 18 November 2026, 15:00 in Moscow.
	now = time.Date(2026, 11, 18, 15, 0, 0, 0, moscow)
)

func day(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, moscow) }

var never time.Time

func TestDatePhrasesBecomeRanges(t *testing.T) {
	cases := []struct {
		name, text, phrase string
		since, until       time.Time
	}{
		// English, calendar units; weeks start on Monday.
		{"today is the day so far", "what did I write today", "today", day(2026, 11, 18), day(2026, 11, 19)},
		{"yesterday is the day before", "notes from yesterday", "yesterday", day(2026, 11, 17), day(2026, 11, 18)},
		{"this week starts on Monday", "meetings this week", "this week", day(2026, 11, 16), day(2026, 11, 23)},
		{"last week is the calendar week before", "what changed last week", "last week", day(2026, 11, 9), day(2026, 11, 16)},
		{"this month is the calendar month", "Atlas budget this month", "this month", day(2026, 11, 1), day(2026, 12, 1)},
		{"last month is the month before", "decisions last month", "last month", day(2026, 10, 1), day(2026, 11, 1)},
		{"this quarter is October to December", "what did I decide this quarter", "this quarter", day(2026, 10, 1), day(2027, 1, 1)},
		{"last quarter is July to September", "goals last quarter", "last quarter", day(2026, 7, 1), day(2026, 10, 1)},
		{"this year is the calendar year", "books this year", "this year", day(2026, 1, 1), day(2027, 1, 1)},
		{"last year is the year before", "trips last year", "last year", day(2025, 1, 1), day(2026, 1, 1)},
		{"since a month name is from its latest start", "what changed in my backup setup since March", "since March", day(2026, 3, 1), never},
		{"a month later in the year than now is last year's", "since December", "since December", day(2025, 12, 1), never},
		{"in a month with a year is that month", "notes in March 2024", "in March 2024", day(2024, 3, 1), day(2024, 4, 1)},
		{"in a month without a year is its latest", "what happened in March", "in March", day(2026, 3, 1), day(2026, 4, 1)},
		{"before a month ends at its start", "ideas before May", "before May", never, day(2026, 5, 1)},
		{"after a month starts when it ends", "after March 2024", "after March 2024", day(2024, 4, 1), never},
		{"until a month keeps it", "until June 2025", "until June 2025", never, day(2025, 7, 1)},
		{"on a day is that day", "what did I do on March 5", "on March 5", day(2026, 3, 5), day(2026, 3, 6)},
		{"since an ISO date is from that day", "since 2024-03-01", "since 2024-03-01", day(2024, 3, 1), never},
		{"before an ISO date excludes it", "before 2024-03-01", "before 2024-03-01", never, day(2024, 3, 1)},
		{"in a year is that year", "in 2024", "in 2024", day(2024, 1, 1), day(2025, 1, 1)},
		{"in the last 7 days is a span back from now", "in the last 7 days", "in the last 7 days", now.AddDate(0, 0, -7), never},
		{"past two weeks counts in words", "past two weeks", "past two weeks", now.AddDate(0, 0, -14), never},
		{"the last month is the 30 days or so before now", "over the last month", "over the last month", day(2026, 10, 18).Add(15 * time.Hour), never},
		{"since last week opens towards now", "since last week", "since last week", day(2026, 11, 9), never},
		{"the start of the year is a since", "since the start of the year", "since the start of the year", day(2026, 1, 1), never},

		// Russian, with inflections.
		{"сегодня is today", "что я писал сегодня", "сегодня", day(2026, 11, 18), day(2026, 11, 19)},
		{"вчера is yesterday", "заметки вчера", "вчера", day(2026, 11, 17), day(2026, 11, 18)},
		{"на этой неделе is this week", "встречи на этой неделе", "на этой неделе", day(2026, 11, 16), day(2026, 11, 23)},
		{"на прошлой неделе is last week", "что изменилось на прошлой неделе", "на прошлой неделе", day(2026, 11, 9), day(2026, 11, 16)},
		{"в этом месяце is this month", "бюджет в этом месяце", "в этом месяце", day(2026, 11, 1), day(2026, 12, 1)},
		{"в прошлом месяце is last month", "что я решил в прошлом месяце", "в прошлом месяце", day(2026, 10, 1), day(2026, 11, 1)},
		{"в этом году is this year", "книги в этом году", "в этом году", day(2026, 1, 1), day(2027, 1, 1)},
		{"в прошлом году is last year", "поездки в прошлом году", "в прошлом году", day(2025, 1, 1), day(2026, 1, 1)},
		{"за прошлый месяц is last month too", "отчёт за прошлый месяц", "за прошлый месяц", day(2026, 10, 1), day(2026, 11, 1)},
		{"с марта, genitive, is since March", "что изменилось с марта", "с марта", day(2026, 3, 1), never},
		{"в марте, prepositional, with a year and its word", "заметки в марте 2024 года", "в марте 2024 года", day(2024, 3, 1), day(2024, 4, 1)},
		{"в мае is May", "что было в мае", "в мае", day(2026, 5, 1), day(2026, 6, 1)},
		{"до мая ends at May", "идеи до мая", "до мая", never, day(2026, 5, 1)},
		{"до марта ends at March", "до марта 2025", "до марта 2025", never, day(2025, 3, 1)},
		{"после мая starts in June", "после мая", "после мая", day(2026, 6, 1), never},
		{"с 1-го марта is a day", "с 1-го марта", "с 1-го марта", day(2026, 3, 1), never},
		{"за последние 7 дней is a span", "за последние 7 дней", "за последние 7 дней", now.AddDate(0, 0, -7), never},
		{"за последние две недели counts in words", "за последние две недели", "за последние две недели", now.AddDate(0, 0, -14), never},
		{"за последний месяц needs no number", "за последний месяц", "за последний месяц", day(2026, 10, 18).Add(15 * time.Hour), never},
		{"с начала года is since January", "с начала года", "с начала года", day(2026, 1, 1), never},
		{"в 2024 году is the year", "в 2024 году", "в 2024 году", day(2024, 1, 1), day(2025, 1, 1)},
		{"ё is е", "заметки за прошлый год", "за прошлый год", day(2025, 1, 1), day(2026, 1, 1)},
		{"с 01.03.2024 reads the Russian date", "с 01.03.2024", "с 01.03.2024", day(2024, 3, 1), never},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := scope.FindDates(c.text, now, moscow)
			if len(got) != 1 {
				t.Fatalf("FindDates(%q) found %d phrases, want 1: %+v", c.text, len(got), got)
			}
			d := got[0]
			if d.Phrase != c.phrase || c.text[d.Start:d.End] != c.phrase {
				t.Errorf("phrase %q at %d..%d, want %q", d.Phrase, d.Start, d.End, c.phrase)
			}
			if !d.Since.Equal(c.since) || !d.Until.Equal(c.until) {
				t.Errorf("range %v .. %v, want %v .. %v", d.Since, d.Until, c.since, c.until)
			}
		})
	}
}

func TestWordsThatAreNotDatesStayWords(t *testing.T) {
	for _, text := range []string{
		"March of the Penguins",
		"the march on Washington",
		"May I see the notes",
		"things I may do in may",
		"с 2000 рублей",
		"в 2024",
		"in 2150 rows",
		"today's plan",
		"last weekend",
		"март был холодным",
		"мая", // a month alone is a word
		`the phrase "last week" in quotes`,
		"«в прошлом месяце» как цитата",
		"по-прежнему",
		"version 2024-03-01x",
	} {
		t.Run(text, func(t *testing.T) {
			if got := scope.FindDates(text, now, moscow); len(got) != 0 {
				t.Errorf("FindDates(%q) = %+v, want no range", text, got)
			}
		})
	}
}

func TestADateRangeTellsItselfForThePage(t *testing.T) {
	cases := []struct{ text, want string }{
		{"this month", "2026-11-01 to 2026-11-30"},
		{"since March", "since 2026-03-01"},
		{"до мая", "before 2026-05-01"},
		{"вчера", "on 2026-11-17"},
	}
	for _, c := range cases {
		got := scope.FindDates(c.text, now, moscow)
		if len(got) != 1 || got[0].String() != c.want {
			t.Errorf("%q tells %v, want %q", c.text, got, c.want)
		}
	}
}

func TestSinceAndUntilFlagsParseWithTheSameRules(t *testing.T) {
	cases := []struct {
		name, value  string
		since, until time.Time
	}{
		{"7d is seven days back", "7d", now.AddDate(0, 0, -7), now.AddDate(0, 0, -7)},
		{"2w is two weeks back", "2w", now.AddDate(0, 0, -14), now.AddDate(0, 0, -14)},
		{"3m is three calendar months back", "3m", now.AddDate(0, -3, 0), now.AddDate(0, -3, 0)},
		{"1y is a year back", "1y", now.AddDate(-1, 0, 0), now.AddDate(-1, 0, 0)},
		{"24h is a day back to the hour", "24h", now.Add(-24 * time.Hour), now.Add(-24 * time.Hour)},
		{"7д is the Russian 7d", "7д", now.AddDate(0, 0, -7), now.AddDate(0, 0, -7)},
		{"a date starts and ends with its day", "2024-03-01", day(2024, 3, 1), day(2024, 3, 2)},
		{"a Russian date too", "01.03.2024", day(2024, 3, 1), day(2024, 3, 2)},
		{"a month is the month", "2024-03", day(2024, 3, 1), day(2024, 4, 1)},
		{"a year is the year", "2024", day(2024, 1, 1), day(2025, 1, 1)},
		{"a month name is its latest", "March", day(2026, 3, 1), day(2026, 4, 1)},
		{"a Russian month name with a year", "март 2024", day(2024, 3, 1), day(2024, 4, 1)},
		{"a period phrase", "last week", day(2026, 11, 9), day(2026, 11, 16)},
		{"a Russian period phrase", "в прошлом месяце", day(2026, 10, 1), day(2026, 11, 1)},
		{"an RFC 3339 time is itself", "2024-03-01T10:00:00Z", time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC), time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC)},
		{"March 31 less a month is February's last day", "1m", time.Date(2026, 2, 28, 15, 0, 0, 0, moscow), time.Time{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := now
			if c.value == "1m" {
				n = time.Date(2026, 3, 31, 15, 0, 0, 0, moscow)
			}
			s, err := scope.ParseSince(c.value, n, moscow)
			if err != nil || !s.Equal(c.since) {
				t.Errorf("ParseSince(%q) = %v, %v; want %v", c.value, s, err, c.since)
			}
			if c.until.IsZero() {
				return
			}
			u, err := scope.ParseUntil(c.value, n, moscow)
			if err != nil || !u.Equal(c.until) {
				t.Errorf("ParseUntil(%q) = %v, %v; want %v", c.value, u, err, c.until)
			}
		})
	}
}

func TestBadSinceValuesSayWhatIsWanted(t *testing.T) {
	for _, v := range []string{"", "soon", "7x", "2024-13-01", "32.01.2024", "before"} {
		if _, err := scope.ParseSince(v, now, moscow); err == nil {
			t.Errorf("ParseSince(%q) accepted", v)
		}
	}
	if _, err := scope.ParseUntil("since May", now, moscow); err == nil {
		t.Errorf("ParseUntil accepted a period open towards now")
	}
}
