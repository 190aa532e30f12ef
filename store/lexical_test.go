package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/lexical"
	"github.com/exocortex/exocortex/schemas"
)

var lexSentences = map[string][]string{
	"en": {
		"The river floods the valley every spring and farmers plant rice after the water recedes.",
		"Tomatoes need full sun, regular watering and a trellis to climb.",
		"The committee approved the new budget for public libraries in March.",
		"Photosynthesis turns light, water and carbon dioxide into sugar and oxygen.",
		"The old bridge was rebuilt in stone after the wooden one burned down.",
		"Backups should be tested by restoring them on a second machine.",
		"The orchestra played Tchaikovsky's fifth symphony at the opening night.",
		"Migrating birds follow the coastline and rest in the wetlands.",
		"A compiler translates source code into machine instructions.",
		"The university library keeps rare manuscripts in a climate-controlled vault.",
		"Volcanic soil is rich in minerals, which is why vineyards grow on the slopes.",
		"Our team meets on Mondays to plan the sprint and review open issues.",
		"The treaty ended the war and fixed the border along the river.",
		"Bread dough rises faster in a warm kitchen.",
		"Solar panels produce less power in winter when the days are short.",
		"The museum opened a new wing for modern art and photography.",
	},
	"ru": {
		"Река каждую весну затапливает долину, и крестьяне сажают рис после спада воды.",
		"Помидорам нужно много солнца, регулярный полив и опора.",
		"Комитет утвердил новый бюджет для публичных библиотек в марте.",
		"Фотосинтез превращает свет, воду и углекислый газ в сахар и кислород.",
		"Старый мост перестроили из камня после того, как деревянный сгорел.",
		"Резервные копии нужно проверять восстановлением на второй машине.",
		"Оркестр исполнил пятую симфонию Чайковского на открытии сезона.",
		"Перелётные птицы летят вдоль побережья и отдыхают на болотах.",
		"Компилятор переводит исходный код в машинные инструкции.",
		"Университетская библиотека хранит редкие рукописи в хранилище с климат-контролем.",
		"Вулканическая почва богата минералами, поэтому виноградники растут на склонах.",
		"Наша команда встречается по понедельникам, чтобы планировать спринт.",
		"Договор закончил войну и закрепил границу по реке.",
		"Тесто для хлеба поднимается быстрее на тёплой кухне.",
		"Солнечные панели дают меньше энергии зимой, когда дни короткие.",
		"Музей открыл новое крыло для современного искусства и фотографии.",
	},
}

var lexQueries = []string{
	"when do farmers plant rice", "tomatoes sun", "budget for libraries", "photosynthesis oxygen",
	"stone bridge", "how to test backups", "Tchaikovsky symphony", "birds wetlands coastline",
	"compiler machine code", "rare manuscripts vault", "volcanic soil vineyards", "sprint planning",
	"treaty border river", "bread dough warm", "solar panels winter", "museum modern art",
	"когда сажают рис", "помидоры солнце", "бюджет библиотек", "фотосинтез кислород",
	"каменный мост", "проверить резервные копии", "симфония Чайковского", "птицы побережье",
	"компилятор код", "редкие рукописи", "вулканическая почва", "планировать спринт",
	"граница по реке", "хлеб тесто", "солнечные панели зимой", "музей искусства",
	"river", "реке", "the", "Title 3", "Раздел 2", "library библиотека", "!!! ?? ...", "",
}

// lexCorpus writes chunks from..n-1 (from a multiple of 10) of sentences
// recombined at random, in documents of 10, into s; it returns the chunk
// events by id.
func lexCorpus(t testing.TB, s *Store, from, n int, seed uint64) map[string]*schemas.ChunkCreated {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	out := map[string]*schemas.ChunkCreated{}
	for d := from / 10; d*10 < n; d++ {
		doc := fmt.Sprintf("d%03d", d)
		var ids []string
		for i := d * 10; i < (d+1)*10 && i < n; i++ {
			lang := []string{"en", "ru"}[rng.IntN(2)]
			var parts []string
			for j := 0; j < 2+rng.IntN(5); j++ {
				parts = append(parts, lexSentences[lang][rng.IntN(len(lexSentences[lang]))])
			}
			c := chunkEv(fmt.Sprintf("c%04d", i), doc, 1, strings.Join(parts, " "))
			c.Lang = lang
			if i%7 == 0 {
				c.Lang = ""
			}
			c.SectionPath = []string{fmt.Sprintf("Section %d", i%5), fmt.Sprintf("Раздел %d", i%3)}
			mustUpsert(t, s, c, true)
			out[c.ChunkID] = c
			ids = append(ids, c.ChunkID)
		}
		st := structure(doc, 1, ids...)
		st.Title = fmt.Sprintf("Title %d", d%9)
		mustApply(t, s, st, true)
	}
	return out
}

// agree checks that two stores rank every query alike: the same scores in
// the same places and the same chunks, save the order of chunks with equal
// scores.
func agree(t *testing.T, what string, want, got *Store, opts SearchOptions) {
	t.Helper()
	for _, q := range lexQueries {
		w, g := search(t, want, q, opts), search(t, got, q, opts)
		if len(w) != len(g) {
			t.Fatalf("%s: %q: %d hits %v, want %d %v", what, q, len(g), hitIDs(g), len(w), hitIDs(w))
		}
		for i := range w {
			if math.Abs(w[i].Score-g[i].Score) > 1e-9*math.Max(1, math.Abs(w[i].Score)) {
				t.Fatalf("%s: %q: hit %d scores %g (%s), want %g (%s)\n got %v\nwant %v", what, q, i, g[i].Score, g[i].ChunkID,
					w[i].Score, w[i].ChunkID, hitIDs(g), hitIDs(w))
			}
		}
		// Same chunks at each distinct score (the last score may be cut by k).
		group := func(hs []Hit) map[string][]string {
			m := map[string][]string{}
			last := fmt.Sprintf("%.9g", hs[len(hs)-1].Score)
			for _, h := range hs {
				if k := fmt.Sprintf("%.9g", h.Score); k != last {
					m[k] = append(m[k], h.ChunkID)
				}
			}
			for k := range m {
				sortStrings(m[k])
			}
			return m
		}
		if len(w) == 0 {
			continue
		}
		wg, gg := group(w), group(g)
		for k, ids := range wg {
			if strings.Join(ids, ",") != strings.Join(gg[k], ",") {
				t.Fatalf("%s: %q: chunks at score %s are %v, want %v", what, q, k, gg[k], ids)
			}
		}
		if w[0].ChunkID != g[0].ChunkID && w[0].Score != w[min(1, len(w)-1)].Score {
			t.Fatalf("%s: %q: top hit %s, want %s", what, q, g[0].ChunkID, w[0].ChunkID)
		}
	}
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// openPair opens a writer with the memory engine and a reader of the same
// database with FTS5.
func openPair(t *testing.T) (mem, fts *Store) {
	t.Helper()
	mem = openTest(t)
	mem.Lexical = LexicalMemory
	fts, err := OpenReadOnly(mem.Path())
	if err != nil {
		t.Fatal(err)
	}
	fts.Lexical = LexicalFTS5
	t.Cleanup(func() { fts.Close() })
	return mem, fts
}

func TestTheMemoryEngineRanksAsFTS5(t *testing.T) {
	mem, fts := openPair(t)
	lexCorpus(t, mem, 0, 400, 1)
	for _, o := range []SearchOptions{{}, {K: 50}, {Lang: "ru"}, {Lang: "en", K: 3}, {Weights: PlainWeights}} {
		agree(t, fmt.Sprintf("options %+v", o), fts, mem, o)
	}
	// Common terms left out (see CommonFraction) alike.
	defer func(m float64) { CommonMin = m }(CommonMin)
	CommonMin = 5
	mem.count.Store(nil)
	fts.count.Store(nil)
	agree(t, "common terms left out", fts, mem, SearchOptions{K: 20})
}

func TestTheMemoryEngineFollowsEditsAndDeletes(t *testing.T) {
	ctx := context.Background()
	mem, fts := openPair(t)
	// Another process's index, built before the changes, follows them too.
	other, err := OpenReadOnly(mem.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.Lexical = LexicalMemory
	chunks := lexCorpus(t, mem, 0, 200, 2)
	agree(t, "before", fts, other, SearchOptions{K: 20})

	// Edit: new text for a chunk, at a new version of its document.
	c := *chunks["c0005"]
	c.Text, c.Hash, c.DocVersion = "Zebras graze on the savanna near the river.", "h-zebra", 2
	mustUpsert(t, mem, &c, true)
	st := structure("d000", 2)
	for i := 0; i < 10; i++ {
		st.ChunkIDs = append(st.ChunkIDs, fmt.Sprintf("c%04d", i))
	}
	st.ChunkIDs = append(st.ChunkIDs[:3], st.ChunkIDs[4:]...) // c0003 dropped by the structure
	st.Title = "Savanna notes"
	mustApply(t, mem, st, true)
	// Delete: a tombstone and a whole document.
	mustUpsert(t, mem, tombstone("c0015", "d001", 1), true)
	mustApply(t, mem, &schemas.DocStructure{DocID: "d002", Version: 2, Deleted: true}, true)
	// A chunk held without its document is not searchable.
	mustUpsert(t, mem, chunkEv("c9999", "d999", 1, "Zebras are held back."), true)

	for _, s := range []*Store{mem, other} {
		agree(t, "after edits", fts, s, SearchOptions{K: 20})
		hits := search(t, s, "zebras savanna", SearchOptions{})
		if len(hits) == 0 || hits[0].ChunkID != "c0005" || hits[0].Title != "Savanna notes" {
			t.Errorf("zebras savanna: %v, want the edited chunk c0005 of the retitled document first", hitIDs(hits))
		}
		for _, h := range search(t, s, "river реке rice рис", SearchOptions{K: 200}) {
			if h.ChunkID == "c0003" || h.ChunkID == "c0015" || strings.HasPrefix(h.ChunkID, "c002") {
				t.Errorf("deleted chunk %s found", h.ChunkID)
			}
		}
	}
	// Enough deletes to compact the index, then more writes.
	for d := 3; d < 20; d++ {
		mustApply(t, mem, &schemas.DocStructure{DocID: fmt.Sprintf("d%03d", d), Version: 2, Deleted: true}, true)
	}
	lexCorpus(t, mem, 200, 260, 3)
	agree(t, "after many deletes", fts, mem, SearchOptions{K: 30})
	agree(t, "after many deletes, other", fts, other, SearchOptions{K: 30})
	if err := mem.Reindex(ctx); err != nil {
		t.Fatal(err)
	}
	agree(t, "after reindex", fts, other, SearchOptions{K: 30})
}

func TestTheMemoryEngineRebuildsWhenItsLogWasPrunedPastIt(t *testing.T) {
	mem, fts := openPair(t)
	lexCorpus(t, mem, 0, 100, 4)
	other, err := OpenReadOnly(mem.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.Lexical = LexicalMemory
	agree(t, "before", fts, other, SearchOptions{})
	// More writes, then the log pruned past what other has applied.
	mustApply(t, mem, &schemas.DocStructure{DocID: "d001", Version: 2, Deleted: true}, true)
	lexCorpus(t, mem, 100, 130, 5)
	if _, err := mem.w.Exec(`DELETE FROM lex_log WHERE seq < (SELECT max(seq) FROM lex_log)`); err != nil {
		t.Fatal(err)
	}
	agree(t, "after the log was pruned", fts, other, SearchOptions{K: 30})
	for _, h := range search(t, other, "river реке", SearchOptions{K: 200}) {
		if strings.HasPrefix(h.ChunkID, "c001") {
			t.Errorf("deleted chunk %s found", h.ChunkID)
		}
	}
}

func TestAReopenedStoreRebuildsItsMemoryIndexFromSQLite(t *testing.T) {
	mem, _ := openPair(t)
	lexCorpus(t, mem, 0, 150, 6)
	path := mem.Path()
	want := map[string][]string{}
	for _, q := range lexQueries {
		want[q] = hitIDs(search(t, mem, q, SearchOptions{K: 15}))
	}
	mem.Close()
	s, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Lexical = LexicalMemory
	for _, q := range lexQueries {
		if got := hitIDs(search(t, s, q, SearchOptions{K: 15})); strings.Join(got, ",") != strings.Join(want[q], ",") {
			t.Errorf("%q after reopening: %v, want %v", q, got, want[q])
		}
	}
	if _, err := ParseLexical("bm25s"); err == nil {
		t.Error("ParseLexical accepted an unknown engine")
	}
}

func TestTheLexicalEngineComesFromTheStoreThenTheEnvironment(t *testing.T) {
	s := openTest(t)
	t.Setenv(EnvLexical, "")
	if got := s.LexicalEngine(); got != DefaultLexical {
		t.Errorf("engine %q, want the default %q", got, DefaultLexical)
	}
	t.Setenv(EnvLexical, LexicalFTS5)
	if got := s.LexicalEngine(); got != LexicalFTS5 {
		t.Errorf("engine %q with %s=fts5", got, EnvLexical)
	}
	s.Lexical = LexicalMemory
	if got := s.LexicalEngine(); got != LexicalMemory {
		t.Errorf("engine %q with Lexical set to memory", got)
	}
	for _, ok := range []string{"", LexicalFTS5, LexicalMemory} {
		if _, err := ParseLexical(ok); err != nil {
			t.Errorf("ParseLexical(%q): %v", ok, err)
		}
	}
}

func TestAMemoryIndexStartsFromItsSnapshotAndReplaysTheLogAfterIt(t *testing.T) {
	mem, fts := openPair(t)
	lexCorpus(t, mem, 0, 120, 10)
	search(t, mem, "river", SearchOptions{}) // builds, and saves the snapshot
	snap := LexSnapshotPath(mem.Path())
	if _, err := os.Stat(snap); err != nil {
		t.Fatalf("no snapshot after the first build: %v", err)
	}
	// Writes after the snapshot are in the log; a change behind the log's
	// back is not, and shows whether the index came from the snapshot.
	mustApply(t, mem, &schemas.DocStructure{DocID: "d002", Version: 2, Deleted: true}, true)
	lexCorpus(t, mem, 120, 150, 11)
	if _, err := mem.w.Exec(`UPDATE chunks_fts SET body = body || ' quokka' WHERE rowid = (SELECT id FROM chunks WHERE chunk_id = 'c0005')`); err != nil {
		t.Fatal(err)
	}
	open := func() *Store {
		s, err := OpenReadOnly(mem.Path())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		s.Lexical = LexicalMemory
		return s
	}
	s := open()
	if hits := search(t, s, "quokka", SearchOptions{}); len(hits) != 0 {
		t.Errorf("quokka found in %v: the index was rebuilt, not loaded from its snapshot", hitIDs(hits))
	}
	if _, err := mem.w.Exec(`UPDATE chunks_fts SET body = replace(body, ' quokka', '') WHERE rowid = (SELECT id FROM chunks WHERE chunk_id = 'c0005')`); err != nil {
		t.Fatal(err)
	}
	agree(t, "snapshot and the log after it", fts, s, SearchOptions{K: 20})

	// A damaged snapshot, or another database's, is rebuilt from SQLite.
	raw, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)/2] ^= 1
	if err := os.WriteFile(snap, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	agree(t, "damaged snapshot", fts, open(), SearchOptions{K: 20})
	other := openTest(t)
	other.Lexical = LexicalMemory
	lexCorpus(t, other, 0, 30, 12)
	search(t, other, "river", SearchOptions{})
	otherSnap, err := os.ReadFile(LexSnapshotPath(other.Path()))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(snap, otherSnap, 0o644); err != nil {
		t.Fatal(err)
	}
	agree(t, "another database's snapshot", fts, open(), SearchOptions{K: 20})
}

func TestTheMemoryIndexSavesASnapshotAgainAfterEnoughReplays(t *testing.T) {
	defer func(n int64) { LexSnapshotEvery = n }(LexSnapshotEvery)
	LexSnapshotEvery = 5
	mem, fts := openPair(t)
	lexCorpus(t, mem, 0, 50, 13)
	search(t, mem, "river", SearchOptions{})
	stampSeq := func() int64 {
		f, err := os.Open(LexSnapshotPath(mem.Path()))
		if err != nil {
			return -1
		}
		defer f.Close()
		_, stamp, err := lexical.ReadSnapshot(f)
		if err != nil {
			return -1 // being replaced
		}
		var epoch string
		var seq int64
		fmt.Sscanf(string(stamp), "%s %d", &epoch, &seq)
		return seq
	}
	first := stampSeq()
	lexCorpus(t, mem, 50, 70, 14)
	search(t, mem, "river", SearchOptions{})
	for deadline := time.Now().Add(20 * time.Second); stampSeq() <= first; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("snapshot still at log position %d after replaying more than %d entries", first, LexSnapshotEvery)
		}
	}
	for mem.lex.saving.Load() {
		time.Sleep(10 * time.Millisecond)
	}
	s, err := OpenReadOnly(mem.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Lexical = LexicalMemory
	agree(t, "from the newer snapshot", fts, s, SearchOptions{K: 20})
}

// TestASnapshotOfTheFormerFormatIsReadAndSavedAgainInTheCurrentOne puts a
// snapshot in the former format (01, before compressed postings) with the
// database's stamp beside it, holding one term of its own that SQLite does
// not have: a store that reads it finds that term (so it converted the
// snapshot rather than rebuilding from SQLite), and writes the snapshot
// again in the current format, term included.
func TestASnapshotOfTheFormerFormatIsReadAndSavedAgainInTheCurrentOne(t *testing.T) {
	ctx := context.Background()
	mem := openTest(t)
	mem.Lexical = LexicalMemory
	lexCorpus(t, mem, 0, 20, 15)
	if _, err := mem.LexicalIndex(ctx); err != nil {
		t.Fatal(err)
	}
	epoch, err := mem.lexEpoch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stamp := lexStamp(epoch, mem.lex.seq)
	rows, err := mem.r.QueryContext(ctx, `SELECT rowid FROM chunks_fts ORDER BY rowid`)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if len(ids) == 0 {
		t.Fatal("no full-text rows")
	}
	// Format 01: magic, stamp, languages, rows (id, length, language), then
	// per column group its terms, each with its postings as a varint gap
	// and three varint counts; CRC-32 at the end.
	var b []byte
	str := func(s string) { b = binary.AppendUvarint(b, uint64(len(s))); b = append(b, s...) }
	b = append(b, "EXOLEX01"...)
	str(string(stamp))
	b = binary.AppendUvarint(b, 1)
	str("")
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		b = binary.AppendUvarint(b, uint64(id))
		b = binary.AppendUvarint(b, 1)
		b = append(b, 0)
	}
	b = binary.AppendUvarint(b, 1) // words: one term, in the first row
	str("zzformer")
	b = append(b, 1, 0, 1, 0, 0)
	b = binary.AppendUvarint(b, 0) // lemmas: none
	b = binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	path := LexSnapshotPath(mem.Path())
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}

	s, err := OpenReadOnly(mem.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Lexical = LexicalMemory
	idx, err := s.LexicalIndex(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hits := idx.Search(lexical.Query{Words: []string{"zzformer"}}, 10, lexical.Weights{1, 1, 1, 1, 1}, "")
	if len(hits) != 1 || hits[0].ID != ids[0] {
		t.Fatalf("the former snapshot's own term found %v, want row %d: the snapshot was not read", hits, ids[0])
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		raw, err := os.ReadFile(path)
		if err == nil && strings.HasPrefix(string(raw), fmt.Sprintf("EXOLEX%02d", lexical.SnapshotVersion)) && !s.lex.saving.Load() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the snapshot is still in the former format after 20 s (%v)", err)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	again, got, err := lexical.ReadSnapshot(f)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(stamp) || again.ReadVersion() != lexical.SnapshotVersion || again.DocFreq("zzformer") != 1 || again.Len() != len(ids) {
		t.Fatalf("saved again: stamp %q, format %d, %d rows, zzformer in %d; want %q, %d, %d, 1",
			got, again.ReadVersion(), again.Len(), again.DocFreq("zzformer"), stamp, lexical.SnapshotVersion, len(ids))
	}
}
