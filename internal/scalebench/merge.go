package scalebench

import (
	"slices"
	"strconv"
	"strings"
)

// MergeTables is table (Markdown's) with what only old (a table Markdown
// wrote earlier) has kept: the corpus rows of sizes table lacks, and every
// row's p50, p95 and recall at a size where table has no value (another
// size, or a row the run left out: hnswlib without its headers, rerank
// with EXOCORTEX_SCALE_RERANK=0), so that a run at one size, or a partial
// run, leaves the other measurements in place. A row's notes are table's
// when it has the row, else old's. An old text that is not such a table
// keeps nothing.
func MergeTables(old, table string) string {
	oc, om := parseTables(old)
	nc, nm := parseTables(table)
	if nm == nil || om == nil {
		return table
	}
	var kept []string
	for _, s := range om.sizes {
		if !slices.Contains(nm.sizes, s) {
			kept = append(kept, s)
		}
	}
	sizes := append(slices.Clone(nm.sizes), kept...)
	slices.SortFunc(sizes, func(a, b string) int { return sizeChunks(a) - sizeChunks(b) })
	var b strings.Builder
	b.WriteString(nc[0] + "\n" + nc[1] + "\n")
	var corpus []string
	corpus = append(corpus, nc[2:]...)
	for _, row := range oc[2:] {
		if slices.Contains(kept, strings.Fields(cells(row)[0])[0]) {
			corpus = append(corpus, row)
		}
	}
	slices.SortFunc(corpus, func(x, y string) int {
		return sizeChunks(strings.Fields(cells(x)[0])[0]) - sizeChunks(strings.Fields(cells(y)[0])[0])
	})
	for _, row := range corpus {
		b.WriteString(row + "\n")
	}
	b.WriteString("\n| measure | engine |")
	for _, s := range sizes {
		b.WriteString(" " + s + " p50 ms | " + s + " p95 ms | " + s + " recall@10 |")
	}
	b.WriteString(" notes |\n| --- | --- |" + strings.Repeat(" --- | --- | --- |", len(sizes)) + " --- |\n")
	for _, k := range mergedKeys(nm.keys, om.keys) {
		b.WriteString("| " + k[0] + " | " + k[1] + " |")
		for _, s := range sizes {
			c, ok := nm.cells[k][s]
			if !ok {
				c, ok = om.cells[k][s]
			}
			if !ok {
				b.WriteString(" | | |")
				continue
			}
			b.WriteString(" " + strings.Join(c[:], " | ") + " |")
		}
		notes, ok := nm.notes[k]
		if !ok {
			notes = om.notes[k]
		}
		b.WriteString(" " + notes + " |\n")
	}
	return b.String()
}

// measureTable is the second table Markdown writes, parsed.
type measureTable struct {
	sizes []string
	keys  [][2]string                        // measure, engine in order
	cells map[[2]string]map[string][3]string // p50, p95, recall by size
	notes map[[2]string]string
}

// parseTables splits a table Markdown wrote into its corpus table's lines
// and its measure table; nil when it is not one.
func parseTables(text string) (corpus []string, m *measureTable) {
	parts := strings.SplitN(strings.TrimSpace(text), "\n\n", 2)
	if len(parts) != 2 {
		return nil, nil
	}
	corpus = strings.Split(parts[0], "\n")
	lines := strings.Split(strings.TrimSpace(parts[1]), "\n")
	if len(corpus) < 2 || len(lines) < 2 || !strings.HasPrefix(lines[0], "| measure | engine |") {
		return nil, nil
	}
	head := cells(lines[0])
	if (len(head)-3)%3 != 0 {
		return nil, nil
	}
	m = &measureTable{cells: map[[2]string]map[string][3]string{}, notes: map[[2]string]string{}}
	for i := 2; i+3 <= len(head)-1; i += 3 {
		m.sizes = append(m.sizes, strings.Fields(head[i])[0])
	}
	for _, l := range lines[2:] {
		c := cells(l)
		if len(c) != len(head) {
			continue
		}
		k := [2]string{c[0], c[1]}
		m.keys = append(m.keys, k)
		m.cells[k] = map[string][3]string{}
		for j, s := range m.sizes {
			v := [3]string{c[2+3*j], c[3+3*j], c[4+3*j]}
			if v != ([3]string{}) {
				m.cells[k][s] = v
			}
		}
		m.notes[k] = c[len(c)-1]
	}
	return corpus, m
}

// cells are a Markdown table row's cells, trimmed.
func cells(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimSuffix(strings.TrimPrefix(row, "|"), "|")
	out := strings.Split(row, "|")
	for i := range out {
		out[i] = strings.TrimSpace(out[i])
	}
	return out
}

// mergedKeys are the new table's rows in its order, each old-only row
// after the last row of its measure (at the end when none).
func mergedKeys(nk, ok [][2]string) [][2]string {
	out := slices.Clone(nk)
	for _, k := range ok {
		if slices.Contains(out, k) {
			continue
		}
		at := len(out)
		for i := len(out) - 1; i >= 0; i-- {
			if out[i][0] == k[0] {
				at = i + 1
				break
			}
		}
		out = slices.Insert(out, at, k)
	}
	return out
}

// sizeChunks reads SizeName back ("100k", "1M", "2500").
func sizeChunks(s string) int {
	mul := 1
	switch {
	case strings.HasSuffix(s, "M"):
		mul, s = 1_000_000, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "k"):
		mul, s = 1000, strings.TrimSuffix(s, "k")
	}
	n, _ := strconv.Atoi(s)
	return n * mul
}
