package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/exocortex/exocortex/schemas"
)

func TestDocTimesPreferTheNotesOwnDateToItsFileTime(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	mtime := time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)
	for _, d := range []schemas.DocStructure{
		{DocID: "meeting-en", Title: "Meeting", Hash: "h1", Version: mtime.UnixNano(), Meta: map[string]string{"date": "2024-03-12"}},
		{DocID: "встреча-ru", Title: "Встреча", Hash: "h2", Version: mtime.UnixNano(), Meta: map[string]string{"updated": "2024-05-02T10:30:00+03:00", "date": "2024-03-01"}},
		{DocID: "plain", Title: "Plain", Hash: "h3", Version: mtime.UnixNano(), Meta: map[string]string{"date": "someday"}},
		{DocID: "counter", Title: "Counter", Hash: "h4", Version: 7},
	} {
		if _, err := s.ApplyStructure(ctx, &d); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.DocTimes(ctx, []string{"meeting-en", "встреча-ru", "plain", "counter", "missing"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, doc string
		want      time.Time
	}{
		{"a front matter date dates an English note", "meeting-en", time.Date(2024, 3, 12, 0, 0, 0, 0, time.UTC)},
		{"updated wins over date in a Russian note", "встреча-ru", time.Date(2024, 5, 2, 7, 30, 0, 0, time.UTC)},
		{"an unreadable date falls back to the file's time", "plain", mtime},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !got[tc.doc].Equal(tc.want) {
				t.Errorf("%s: %v, want %v", tc.doc, got[tc.doc], tc.want)
			}
		})
	}
	for _, id := range []string{"counter", "missing"} {
		if _, ok := got[id]; ok {
			t.Errorf("%s has a time %v; a version that is a counter, or a document not indexed, has none", id, got[id])
		}
	}
}
