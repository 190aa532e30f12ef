package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// docTimeKeys are the front matter properties that date a note, the most
// telling first: when it was last changed, else when it was written.
var docTimeKeys = []string{"updated", "modified", "lastmod", "last_modified", "date", "created"}

// docTimeLayouts are the forms a front matter date is read in.
var docTimeLayouts = []string{time.RFC3339Nano, time.RFC3339, "2006-01-02T15:04:05", "2006-01-02 15:04:05",
	"2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02", "2006/01/02", "02.01.2006", "20060102150405"}

// minDocTime: a version before it is a counter, not a time.
var minDocTime = time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC)

// DocTimes returns each known document's own time: the date its front
// matter gives (updated, modified, lastmod, date or created, in that
// order), else its source's update time (the version: SiYuan's updated
// stamp, a Markdown file's modification time). Documents the index does
// not hold, or whose time is unknown, are left out.
func (s *Store) DocTimes(ctx context.Context, docIDs []string) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	if len(docIDs) == 0 {
		return out, nil
	}
	ids, err := json.Marshal(docIDs)
	if err != nil {
		return nil, fmt.Errorf("document times: %w", err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT doc_id, version, meta, doc_time FROM documents WHERE doc_id IN (SELECT value FROM json_each(?))`, string(ids))
	if err != nil {
		return nil, fmt.Errorf("document times: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, meta string
		var version, at int64
		if err := rows.Scan(&id, &version, &meta, &at); err != nil {
			return nil, fmt.Errorf("document times: %w", err)
		}
		if at != 0 { // the source's own time (see docTime)
			out[id] = time.Unix(0, at).UTC()
		} else if t, ok := metaTime(meta); ok {
			out[id] = t
		} else if t := time.Unix(0, version).UTC(); t.After(minDocTime) {
			out[id] = t
		}
	}
	return out, rows.Err()
}

// metaTime reads the date a document's meta (JSON object) gives.
func metaTime(meta string) (time.Time, bool) {
	if meta == "" || meta == "{}" {
		return time.Time{}, false
	}
	var m map[string]string
	if json.Unmarshal([]byte(meta), &m) != nil {
		return time.Time{}, false
	}
	for _, k := range docTimeKeys {
		v := strings.TrimSpace(m[k])
		if v == "" {
			continue
		}
		for _, layout := range docTimeLayouts {
			if t, err := time.Parse(layout, v); err == nil && t.After(minDocTime) {
				return t.UTC(), true
			}
		}
	}
	return time.Time{}, false
}
