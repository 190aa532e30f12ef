package store

import (
	"context"
	"encoding/json"
	"fmt"
)

// Facets counts the documents among a query's hits (chunkIDs) by notebook
// (its name where the index knows it, else its id), by tag (each of a
// document's tags) and by month of the document's own time ("2024-03",
// UTC; documents of unknown time are not counted). A document counts once
// however many of its chunks are hits; chunks the index does not hold are
// left out.
func (s *Store) Facets(ctx context.Context, chunkIDs []string) (notebooks, tags, months map[string]int, err error) {
	notebooks, tags, months = map[string]int{}, map[string]int{}, map[string]int{}
	if len(chunkIDs) == 0 {
		return notebooks, tags, months, nil
	}
	docIDs, err := s.docsOfChunks(ctx, chunkIDs)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("facets: %w", err)
	}
	err = s.withCatalog(ctx, func(cat *catalog) {
		for _, id := range docIDs {
			i, ok := cat.byID[id]
			if !ok || !cat.docs[i].indexed {
				continue
			}
			d := &cat.docs[i]
			nb := d.nbName
			if nb == "" {
				nb = d.notebook
			}
			if nb != "" {
				notebooks[nb]++
			}
			for _, t := range d.tags {
				tags[t]++
			}
			if d.time != 0 {
				months[monthOf(d.time)]++
			}
		}
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("facets: %w", err)
	}
	return notebooks, tags, months, nil
}

// docsOfChunks is the distinct documents of the chunks the index holds.
func (s *Store) docsOfChunks(ctx context.Context, chunkIDs []string) ([]string, error) {
	ids, err := json.Marshal(chunkIDs)
	if err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT DISTINCT doc_id FROM chunks WHERE chunk_id IN (SELECT value FROM json_each(?))`, string(ids))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}
