package scope

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// period is a half-open range [start, end) of time; a zero start or end is
// an open side. A moment (7 days ago) is a period with start == end.
type period struct{ start, end time.Time }

// cal does calendar arithmetic in one location: weeks start on Monday,
// months and years are calendar ones, days begin at local midnight.
type cal struct {
	now time.Time
	loc *time.Location
}

func newCal(now time.Time, loc *time.Location) cal {
	if loc == nil {
		loc = now.Location()
	}
	return cal{now: now.In(loc), loc: loc}
}

func (c cal) date(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, c.loc) }

func (c cal) today() time.Time {
	y, m, d := c.now.Date()
	return c.date(y, m, d)
}

// span is the calendar unit ('d', 'w', 'm', 'q', 'y') holding now, moved by
// offset units (-1: the one before).
func (c cal) span(unit byte, offset int) period {
	t := c.today()
	y, m, _ := t.Date()
	var start time.Time
	var next func(time.Time) time.Time
	switch unit {
	case 'd':
		start, next = t, func(t time.Time) time.Time { return t.AddDate(0, 0, 1) }
	case 'w':
		start = t.AddDate(0, 0, -((int(t.Weekday()) + 6) % 7))
		next = func(t time.Time) time.Time { return t.AddDate(0, 0, 7) }
	case 'm':
		start, next = c.date(y, m, 1), func(t time.Time) time.Time { return t.AddDate(0, 1, 0) }
	case 'q':
		start, next = c.date(y, m-(m-1)%3, 1), func(t time.Time) time.Time { return t.AddDate(0, 3, 0) }
	default: // 'y'
		start, next = c.date(y, 1, 1), func(t time.Time) time.Time { return t.AddDate(1, 0, 0) }
	}
	for ; offset < 0; offset++ {
		start = prevStart(unit, start)
	}
	return period{start, next(start)}
}

// prevStart is the start of the unit before the one starting at t.
func prevStart(unit byte, t time.Time) time.Time {
	switch unit {
	case 'd':
		return t.AddDate(0, 0, -1)
	case 'w':
		return t.AddDate(0, 0, -7)
	case 'm':
		return t.AddDate(0, -1, 0)
	case 'q':
		return t.AddDate(0, -3, 0)
	}
	return t.AddDate(-1, 0, 0)
}

// ago is the moment n units ('h', 'd', 'w', 'm', 'y') before now; months
// keep the day where the month has it (March 31 less one month is
// February's last day).
func (c cal) ago(n int, unit byte) time.Time {
	switch unit {
	case 'h':
		return c.now.Add(-time.Duration(n) * time.Hour)
	case 'd':
		return c.now.AddDate(0, 0, -n)
	case 'w':
		return c.now.AddDate(0, 0, -7*n)
	case 'm':
		return addMonths(c.now, -n)
	}
	return addMonths(c.now, -12*n)
}

func addMonths(t time.Time, n int) time.Time {
	y, m, d := t.Date()
	first := time.Date(y, m+time.Month(n), 1, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), t.Location())
	if last := first.AddDate(0, 1, -1).Day(); d > last {
		d = last
	}
	return first.AddDate(0, 0, d-1)
}

// month is month m of year y, or (y == 0) the latest month m that has begun.
func (c cal) month(y int, m time.Month) period {
	if y == 0 {
		y = c.now.Year()
		if m > c.now.Month() {
			y--
		}
	}
	s := c.date(y, m, 1)
	return period{s, s.AddDate(0, 1, 0)}
}

// day is day d of month m of year y, or (y == 0) the latest such day that has begun.
func (c cal) day(y int, m time.Month, d int) (period, bool) {
	yy := y
	if yy == 0 {
		yy = c.now.Year()
	}
	s := c.date(yy, m, d)
	if s.Month() != m { // February 30
		return period{}, false
	}
	if y == 0 && s.After(c.now) {
		if s = c.date(yy-1, m, d); s.Month() != m {
			return period{}, false
		}
	}
	return period{s, s.AddDate(0, 0, 1)}, true
}

func (c cal) year(y int) period {
	s := c.date(y, 1, 1)
	return period{s, s.AddDate(1, 0, 0)}
}

// valueErr is the error of a --since/--until or operator value.
func valueErr(v string) error {
	return fmt.Errorf("date %q: want a span back from now (7d, 2w, 3m, 1y, 24h), a date (2024-03-01, 01.03.2024), a month (2024-03, March 2024), a year (2024) or a period (today, last week, в прошлом месяце)", v)
}

// parseValue reads the value of --since, --until and the date operators as
// the period it names: a span back from now is a moment; a date, month or
// year is itself; a date phrase is its range.
func (c cal) parseValue(v string) (period, error) {
	v = strings.TrimSpace(v)
	if p, ok := c.parseSpan(v); ok {
		return p, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return period{t, t}, nil
	}
	if p, ok := c.parseNumericDate(v); ok {
		return p, nil
	}
	ws := words(v, nil)
	if p, n, ok := c.bareMonth(ws, 0); ok && n == len(ws) {
		return p, nil
	}
	if ms := c.findDates(v, nil); len(ms) == 1 && ms[0].Start == 0 && ms[0].End == len(v) {
		return period{ms[0].Since, ms[0].Until}, nil
	}
	return period{}, valueErr(v)
}

// parseSpan reads "7d", "2w", "3m", "1y", "24h" (Russian д, н, м, г, ч too).
func (c cal) parseSpan(v string) (period, bool) {
	i := 0
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		i++
	}
	if i == 0 || i > 5 {
		return period{}, false
	}
	n, _ := strconv.Atoi(v[:i])
	u, ok := spanUnits[strings.ToLower(strings.TrimSpace(v[i:]))]
	if !ok {
		return period{}, false
	}
	t := c.ago(n, u)
	return period{t, t}, true
}

var spanUnits = map[string]byte{
	"h": 'h', "d": 'd', "w": 'w', "m": 'm', "y": 'y',
	"ч": 'h', "д": 'd', "н": 'w', "м": 'm', "г": 'y',
}

// parseNumericDate reads 2024-03-01, 01.03.2024, 2024-03 and 2024.
func (c cal) parseNumericDate(v string) (period, bool) {
	for _, layout := range []string{time.DateOnly, "02.01.2006", "2.1.2006"} {
		if t, err := time.ParseInLocation(layout, v, c.loc); err == nil {
			return period{t, t.AddDate(0, 0, 1)}, true
		}
	}
	if t, err := time.ParseInLocation("2006-01", v, c.loc); err == nil {
		return period{t, t.AddDate(0, 1, 0)}, true
	}
	if y, ok := parseYear(v); ok {
		return c.year(y), true
	}
	return period{}, false
}

func parseYear(v string) (int, bool) {
	if len(v) != 4 {
		return 0, false
	}
	y, err := strconv.Atoi(v)
	return y, err == nil && y >= 1900 && y <= 2199
}

// ParseSince reads the value of --since (and of since:, after:, после:):
// 7d, 2w, 3m, 1y or 24h back from now, a date (2024-03-01), a month
// (2024-03, March 2024), a year (2024), an RFC 3339 time, or a period
// ("last week", "в прошлом месяце"); it returns where that begins, in loc.
func ParseSince(v string, now time.Time, loc *time.Location) (time.Time, error) {
	p, err := newCal(now, loc).parseValue(v)
	if err == nil && p.start.IsZero() {
		err = fmt.Errorf("since %q: the period has no start (it is open towards the past)", v)
	}
	return p.start, err
}

// ParseUntil reads the value of --until (and of until:) as ParseSince does
// and returns where the period ends, exclusive: --until 2024-03-31 keeps
// March 31, --until 7d keeps notes older than 7 days.
func ParseUntil(v string, now time.Time, loc *time.Location) (time.Time, error) {
	p, err := newCal(now, loc).parseValue(v)
	if err == nil && p.end.IsZero() {
		err = fmt.Errorf("until %q: the period has no end (it is open towards now)", v)
	}
	return p.end, err
}
