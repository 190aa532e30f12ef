package vectors

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/google/uuid"
	"github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Collection parameters the Qdrant store creates its collection with.
const (
	qdrantM           = 16
	qdrantEfConstruct = 100
	qdrantQuantile    = 0.99
)

// Payload keys of a Qdrant point.
const (
	payloadChunkID = "chunk_id"
	payloadDocID   = "doc_id"
	payloadLang    = "lang"
	payloadPassage = "passage"
	// payloadLexFormat is the LexicalFormat a point's lexical vector and
	// passage were written in (absent: written before the marker, format
	// 1, or without either).
	payloadLexFormat = "lex_format"
)

// QdrantLexicalVector is the name of the collection's sparse vector: each
// chunk's LexicalDoc, with Qdrant's IDF modifier.
const QdrantLexicalVector = "lex"

// pointNamespace derives Qdrant point ids (which must be UUIDs or integers)
// from chunk ids: uuid.NewSHA1(pointNamespace, chunkID). Never change it: the
// ids of every stored point depend on it.
var pointNamespace = uuid.MustParse("5f1d6c1e-8a44-4f0e-9d53-0e3c1a7b2f60")

// PointUUID is the Qdrant point id of a chunk.
func PointUUID(chunkID string) string {
	return uuid.NewSHA1(pointNamespace, []byte(chunkID)).String()
}

// Qdrant is the store backed by a Qdrant collection.
type Qdrant struct {
	client *qdrant.Client
	cfg    QdrantConfig
	dim    int
	// lexical: the collection has the sparse vector (see HasLexical);
	// noLexical says why not.
	lexical   bool
	noLexical string
}

// OpenQdrant connects to Qdrant, checks it answers, and creates the
// collection (cosine distance, int8 scalar quantisation, HNSW m=16
// ef_construct=100, keyword indexes on lang and doc_id) if it is missing. An
// existing collection must have dimension dim and cosine distance. A new
// collection also gets the sparse vector QdrantLexicalVector (IDF modifier)
// for lexical search; an existing one without it opens for dense search
// only (HasLexical says so): Qdrant up to 1.17 cannot add a vector to an
// existing collection, so lexical search on Qdrant needs the collection
// created anew and filled again (check --repair resends every chunk whose
// point is missing; the embed cache spares most of the embedding).
func OpenQdrant(ctx context.Context, dim int, cfg QdrantConfig) (*Qdrant, error) {
	cfg = cfg.withDefaults()
	if err := errors.Join(cfg.Validate(), Config{Kind: KindQdrant, Dim: dim}.Validate()); err != nil {
		return nil, err
	}
	host, port, _ := splitAddr(cfg.Addr)
	client, err := qdrant.NewClient(&qdrant.Config{
		Host:   host,
		Port:   port,
		APIKey: cfg.APIKey,
		UseTLS: cfg.UseTLS,
		// The check runs on a background context and only logs; Open does
		// its own health check on ctx below.
		SkipCompatibilityCheck: true,
	})
	if err != nil {
		return nil, fmt.Errorf("vectors: qdrant %s: connect: %w", cfg.Addr, err)
	}
	q := &Qdrant{client: client, cfg: cfg, dim: dim}
	if _, err := client.HealthCheck(ctx); err != nil {
		client.Close()
		return nil, fmt.Errorf("vectors: qdrant %s: health check: %w", cfg.Addr, err)
	}
	if err := q.ensureCollection(ctx); err != nil {
		client.Close()
		return nil, err
	}
	return q, nil
}

func (q *Qdrant) errorf(format string, args ...any) error {
	return fmt.Errorf("vectors: qdrant %s/%s: "+format, append([]any{q.cfg.Addr, q.cfg.Collection}, args...)...)
}

func (q *Qdrant) ensureCollection(ctx context.Context) error {
	coll := q.cfg.Collection
	exists, err := q.client.CollectionExists(ctx, coll)
	if err != nil {
		return q.errorf("check collection: %w", err)
	}
	if !exists {
		err := q.client.CreateCollection(ctx, &qdrant.CreateCollection{
			CollectionName: coll,
			VectorsConfig: qdrant.NewVectorsConfig(&qdrant.VectorParams{
				Size:     uint64(q.dim),
				Distance: qdrant.Distance_Cosine,
			}),
			HnswConfig: &qdrant.HnswConfigDiff{
				M:           qdrant.PtrOf(uint64(qdrantM)),
				EfConstruct: qdrant.PtrOf(uint64(qdrantEfConstruct)),
			},
			QuantizationConfig: qdrant.NewQuantizationScalar(&qdrant.ScalarQuantization{
				Type:      qdrant.QuantizationType_Int8,
				Quantile:  qdrant.PtrOf(float32(qdrantQuantile)),
				AlwaysRam: qdrant.PtrOf(true),
			}),
			SparseVectorsConfig: qdrant.NewSparseVectorsConfig(map[string]*qdrant.SparseVectorParams{
				QdrantLexicalVector: {Modifier: qdrant.Modifier_Idf.Enum()},
			}),
		})
		// Another process may have created it meanwhile; the check below
		// decides.
		if err != nil && status.Code(err) != codes.AlreadyExists {
			return q.errorf("create collection: %w", err)
		}
	}
	info, err := q.client.GetCollectionInfo(ctx, coll)
	if err != nil {
		return q.errorf("get collection: %w", err)
	}
	params := info.GetConfig().GetParams().GetVectorsConfig().GetParams()
	switch {
	case params == nil:
		return q.errorf("collection has named vectors; expected one unnamed vector of size %d: %w", q.dim, ErrInvalid)
	case params.GetSize() != uint64(q.dim):
		return q.errorf("collection has vector size %d, store has %d: %w", params.GetSize(), q.dim, ErrDimMismatch)
	case params.GetDistance() != qdrant.Distance_Cosine:
		return q.errorf("collection uses %s distance, expected Cosine: %w", params.GetDistance(), ErrInvalid)
	}
	sp, ok := info.GetConfig().GetParams().GetSparseVectorsConfig().GetMap()[QdrantLexicalVector]
	switch {
	case !ok:
		q.noLexical = fmt.Sprintf("collection %s has no sparse vector %q (created before lexical search on Qdrant): "+
			"to search it lexically, stop exocortex, delete the collection, and run exocortex check --repair --vectors qdrant, "+
			"which creates it anew and sends every chunk again", coll, QdrantLexicalVector)
	case sp.GetModifier() != qdrant.Modifier_Idf:
		q.noLexical = fmt.Sprintf("collection %s: sparse vector %q has modifier %s, expected Idf", coll, QdrantLexicalVector, sp.GetModifier())
	default:
		q.lexical = true
	}
	for _, ix := range qdrantIndexes {
		if _, ok := info.GetPayloadSchema()[ix.field]; ok {
			continue
		}
		_, err := q.client.CreateFieldIndex(ctx, &qdrant.CreateFieldIndexCollection{
			CollectionName: coll,
			Wait:           qdrant.PtrOf(true),
			FieldName:      ix.field,
			FieldType:      ix.typ.Enum(),
		})
		if err != nil {
			return q.errorf("create payload index on %s: %w", ix.field, err)
		}
	}
	return nil
}

// Name implements Store.
func (q *Qdrant) Name() string { return KindQdrant }

// Dim implements Store.
func (q *Qdrant) Dim() int { return q.dim }

// Upsert implements Store: the points' ids are PointUUID(ID); with Wait, so
// the points are searchable when it returns.
func (q *Qdrant) Upsert(ctx context.Context, pts []Point) error {
	if len(pts) == 0 {
		return nil
	}
	out := make([]*qdrant.PointStruct, 0, len(pts))
	for i, p := range pts {
		if p.ID == "" {
			return q.errorf("upsert point %d: empty id: %w", i, ErrInvalid)
		}
		if len(p.Vector) != q.dim {
			return q.errorf("upsert %q: vector has %d dimensions, store has %d: %w", p.ID, len(p.Vector), q.dim, ErrDimMismatch)
		}
		if err := checkFinite(p.Vector); err != nil {
			return q.errorf("upsert %q: %w", p.ID, err)
		}
		ps := &qdrant.PointStruct{
			Id:      qdrant.NewID(PointUUID(p.ID)),
			Vectors: qdrant.NewVectorsDense(p.Vector),
			Payload: map[string]*qdrant.Value{
				payloadChunkID: qdrant.NewValueString(p.ID),
				payloadDocID:   qdrant.NewValueString(p.DocID),
				payloadLang:    qdrant.NewValueString(p.Lang),
			},
		}
		putMeta(ps.Payload, p.Meta)
		if q.lexical && !p.Sparse.Empty() {
			if err := checkSparse(p.Sparse); err != nil {
				return q.errorf("upsert %q: %w", p.ID, err)
			}
			ps.Vectors = qdrant.NewVectorsMap(map[string]*qdrant.Vector{
				"":                  qdrant.NewVectorDense(p.Vector),
				QdrantLexicalVector: qdrant.NewVectorSparse(p.Sparse.Indices, p.Sparse.Values),
			})
		}
		if q.lexical && len(p.Passage) > 0 {
			ps.Payload[payloadPassage] = qdrant.NewValueString(p.Passage)
			ps.Payload[payloadLexFormat] = qdrant.NewValueInt(LexicalFormat)
		}
		out = append(out, ps)
	}
	_, err := q.client.Upsert(ctx, &qdrant.UpsertPoints{
		CollectionName: q.cfg.Collection,
		Wait:           qdrant.PtrOf(true),
		Points:         out,
	})
	if err != nil {
		return q.errorf("upsert %d points (first %q): %w", len(pts), pts[0].ID, err)
	}
	return nil
}

// pointIDs are the Qdrant point ids of chunk ids.
func pointIDs(ids []string) []*qdrant.PointId {
	pids := make([]*qdrant.PointId, len(ids))
	for i, id := range ids {
		pids[i] = qdrant.NewID(PointUUID(id))
	}
	return pids
}

// Delete implements Store.
func (q *Qdrant) Delete(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	pids := pointIDs(ids)
	_, err := q.client.Delete(ctx, &qdrant.DeletePoints{
		CollectionName: q.cfg.Collection,
		Wait:           qdrant.PtrOf(true),
		Points:         qdrant.NewPointsSelectorIDs(pids),
	})
	if err != nil {
		return q.errorf("delete %d points (first %q): %w", len(ids), ids[0], err)
	}
	return nil
}

// qdrantFilter translates a Filter: must-match on lang, on doc_id being
// any of DocIDs, on the point being one of IDs (has_id), and Meta as a
// nested filter.
func qdrantFilter(f Filter) (*qdrant.Filter, error) {
	var must []*qdrant.Condition
	if f.Lang != "" {
		must = append(must, qdrant.NewMatchKeyword(payloadLang, f.Lang))
	}
	if len(f.DocIDs) > 0 {
		must = append(must, qdrant.NewMatchKeywords(payloadDocID, f.DocIDs...))
	}
	switch {
	case f.IDs != nil && f.IDs.docs != nil:
		// A set of documents: doc_id (and lang) conditions, no id list.
		must = append(must, qdrant.NewMatchKeywords(payloadDocID, f.IDs.docs...))
		if f.IDs.langs != nil {
			must = append(must, qdrant.NewMatchKeywords(payloadLang, f.IDs.langs...))
		}
	case f.IDs != nil:
		must = append(must, qdrant.NewHasID(pointIDs(f.IDs.IDs())...))
	}
	if !f.Meta.Empty() {
		mf, err := qdrantMeta(f.Meta)
		if err != nil {
			return nil, err
		}
		must = append(must, qdrant.NewFilterAsCondition(mf))
	}
	if must == nil {
		return nil, nil
	}
	return &qdrant.Filter{Must: must}, nil
}

// Search implements Store through the Query API, with hnsw_ef = opts.Ef when
// set, as given: Qdrant itself searches with the larger of hnsw_ef and the
// limit, so the widening ladder (64, 96, 128) reaches it unchanged.
func (q *Qdrant) Search(ctx context.Context, vec []float32, opts SearchOptions) ([]Result, error) {
	k, err := searchK(opts)
	if err != nil {
		return nil, q.errorf("%w", err)
	}
	if len(vec) != q.dim {
		return nil, q.errorf("search: query has %d dimensions, store has %d: %w", len(vec), q.dim, ErrDimMismatch)
	}
	if err := checkFinite(vec); err != nil {
		return nil, q.errorf("search: query: %w", err)
	}
	filter, err := qdrantFilter(opts.Filter)
	if err != nil {
		return nil, q.errorf("search: %w", err)
	}
	req := &qdrant.QueryPoints{
		CollectionName: q.cfg.Collection,
		Query:          qdrant.NewQueryDense(vec),
		Filter:         filter,
		Limit:          qdrant.PtrOf(uint64(k)),
		WithPayload:    qdrant.NewWithPayloadInclude(payloadChunkID, payloadDocID),
	}
	if opts.Ef > 0 {
		req.Params = &qdrant.SearchParams{HnswEf: qdrant.PtrOf(uint64(opts.Ef))}
	}
	hits, err := q.client.Query(ctx, req)
	if err != nil {
		return nil, q.errorf("search: %w", err)
	}
	out := make([]Result, 0, len(hits))
	for _, h := range hits {
		pl := h.GetPayload()
		out = append(out, Result{
			ID:    pl[payloadChunkID].GetStringValue(),
			DocID: pl[payloadDocID].GetStringValue(),
			Score: h.GetScore(),
		})
	}
	return out, nil
}

// Count implements Store (an exact count).
func (q *Qdrant) Count(ctx context.Context) (int, error) {
	n, err := q.client.Count(ctx, &qdrant.CountPoints{
		CollectionName: q.cfg.Collection,
		Exact:          qdrant.PtrOf(true),
	})
	if err != nil {
		return 0, q.errorf("count: %w", err)
	}
	return int(n), nil
}

// CountWhere implements LexicalStore (an exact count).
func (q *Qdrant) CountWhere(ctx context.Context, f Filter) (int, error) {
	filter, err := qdrantFilter(f)
	if err != nil {
		return 0, q.errorf("count: %w", err)
	}
	n, err := q.client.Count(ctx, &qdrant.CountPoints{
		CollectionName: q.cfg.Collection,
		Filter:         filter,
		Exact:          qdrant.PtrOf(true),
	})
	if err != nil {
		return 0, q.errorf("count where %+v: %w", f, err)
	}
	return int(n), nil
}

// Close implements Store.
func (q *Qdrant) Close() error {
	if err := q.client.Close(); err != nil {
		return q.errorf("close: %w", err)
	}
	return nil
}

// checkFinite rejects zero and non-finite vectors, which cosine cannot score.
func checkFinite(v []float32) error {
	var ss float64
	for _, x := range v {
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("vector has a non-finite component: %w", ErrInvalid)
		}
		ss += f * f
	}
	if ss == 0 {
		return fmt.Errorf("vector is all zeros: %w", ErrInvalid)
	}
	return nil
}

// HasLexical implements LexicalStore.
func (q *Qdrant) HasLexical() (bool, string) { return q.lexical, q.noLexical }

// SearchLexical implements LexicalStore through the Query API on the sparse
// vector QdrantLexicalVector.
func (q *Qdrant) SearchLexical(ctx context.Context, sv SparseVector, opts SearchOptions) ([]Result, error) {
	k, err := searchK(opts)
	if err != nil {
		return nil, q.errorf("lexical search: %w", err)
	}
	if !q.lexical {
		return nil, q.errorf("lexical search: %s: %w", q.noLexical, ErrNoLexical)
	}
	if err := checkSparse(sv); err != nil {
		return nil, q.errorf("lexical search: query: %w", err)
	}
	if sv.Empty() {
		return nil, nil
	}
	f := opts.Filter
	lang := f.Lang
	f.Lang = ""
	filter, err := qdrantFilter(f)
	if err != nil {
		return nil, q.errorf("lexical search: %w", err)
	}
	if lang != "" {
		// The language's chunks and those whose language is undetermined.
		if filter == nil {
			filter = &qdrant.Filter{}
		}
		filter.Must = append(filter.Must, qdrant.NewMatchKeywords(payloadLang, lang, ""))
	}
	hits, err := q.client.Query(ctx, &qdrant.QueryPoints{
		CollectionName: q.cfg.Collection,
		Query:          qdrant.NewQuerySparse(sv.Indices, sv.Values),
		Using:          qdrant.PtrOf(QdrantLexicalVector),
		Filter:         filter,
		Limit:          qdrant.PtrOf(uint64(k)),
		WithPayload:    qdrant.NewWithPayloadInclude(payloadChunkID, payloadDocID, payloadPassage),
	})
	if err != nil {
		return nil, q.errorf("lexical search: %w", err)
	}
	out := make([]Result, 0, len(hits))
	for _, h := range hits {
		pl := h.GetPayload()
		r := Result{ID: pl[payloadChunkID].GetStringValue(), DocID: pl[payloadDocID].GetStringValue(), Score: h.GetScore()}
		r.Passage = pl[payloadPassage].GetStringValue()
		out = append(out, r)
	}
	return out, nil
}

// Passages implements LexicalStore.
func (q *Qdrant) Passages(ctx context.Context, ids []string) (map[string]string, error) {
	if len(ids) == 0 {
		return map[string]string{}, nil
	}
	pids := pointIDs(ids)
	pts, err := q.client.Get(ctx, &qdrant.GetPoints{
		CollectionName: q.cfg.Collection,
		Ids:            pids,
		WithPayload:    qdrant.NewWithPayloadInclude(payloadChunkID, payloadPassage),
	})
	if err != nil {
		return nil, q.errorf("get passages of %d points (first %q): %w", len(ids), ids[0], err)
	}
	out := make(map[string]string, len(pts))
	for _, p := range pts {
		pl := p.GetPayload()
		if s := pl[payloadPassage].GetStringValue(); s != "" {
			out[pl[payloadChunkID].GetStringValue()] = s
		}
	}
	return out, nil
}

var _ LexicalStore = (*Qdrant)(nil)

// RefreshLexical rewrites the lexical vector and passage of those of ids
// that are stored, keeping their dense vectors: fill is called with each
// stored point (ID, DocID, Lang and Vector set) and sets its Sparse and
// Passage, or returns false to leave it as it is. It returns how many points
// were rewritten. The index stage calls it when a document's structure
// changes (a new title or section path, tags, time: fill sets Meta too)
// without new content to embed. A collection without the lexical vector
// keeps only the dense vector and Meta of what fill sets.
func (q *Qdrant) RefreshLexical(ctx context.Context, ids []string, fill func(p *Point) bool) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	pids := pointIDs(ids)
	got, err := q.client.Get(ctx, &qdrant.GetPoints{
		CollectionName: q.cfg.Collection,
		Ids:            pids,
		WithPayload:    qdrant.NewWithPayloadInclude(payloadChunkID, payloadDocID, payloadLang),
		WithVectors:    qdrant.NewWithVectors(true),
	})
	if err != nil {
		return 0, q.errorf("refresh lexical vectors: get %d points (first %q): %w", len(ids), ids[0], err)
	}
	var pts []Point
	for _, g := range got {
		pl := g.GetPayload()
		dense := g.GetVectors().GetVector()
		if named := g.GetVectors().GetVectors(); named != nil {
			dense = named.GetVectors()[""]
		}
		vec := dense.GetDense().GetData()
		if vec == nil {
			vec = dense.GetData()
		}
		p := Point{ID: pl[payloadChunkID].GetStringValue(), DocID: pl[payloadDocID].GetStringValue(),
			Lang: pl[payloadLang].GetStringValue(), Vector: vec}
		if p.ID == "" || len(vec) != q.dim || !fill(&p) {
			continue
		}
		pts = append(pts, p)
	}
	if err := q.Upsert(ctx, pts); err != nil {
		return 0, fmt.Errorf("refresh lexical vectors: %w", err)
	}
	return len(pts), nil
}

// DropCollection deletes the store's collection and every point in it
// (exocortex eval's throwaway collection).
func (q *Qdrant) DropCollection(ctx context.Context) error {
	if err := q.client.DeleteCollection(ctx, q.cfg.Collection); err != nil {
		return q.errorf("delete collection: %w", err)
	}
	return nil
}

// QdrantCollectionDim is the dense vector size of the configured
// collection, 0 when it does not exist (exocortex check beside a running
// system opens the collection with it: it loads no embedding model).
func QdrantCollectionDim(ctx context.Context, cfg QdrantConfig) (int, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return 0, err
	}
	host, port, _ := splitAddr(cfg.Addr)
	client, err := qdrant.NewClient(&qdrant.Config{Host: host, Port: port, APIKey: cfg.APIKey, UseTLS: cfg.UseTLS, SkipCompatibilityCheck: true})
	if err != nil {
		return 0, fmt.Errorf("vectors: qdrant %s: connect: %w", cfg.Addr, err)
	}
	defer client.Close()
	exists, err := client.CollectionExists(ctx, cfg.Collection)
	if err != nil {
		return 0, fmt.Errorf("vectors: qdrant %s/%s: check collection: %w", cfg.Addr, cfg.Collection, err)
	}
	if !exists {
		return 0, nil
	}
	info, err := client.GetCollectionInfo(ctx, cfg.Collection)
	if err != nil {
		return 0, fmt.Errorf("vectors: qdrant %s/%s: get collection: %w", cfg.Addr, cfg.Collection, err)
	}
	return int(info.GetConfig().GetParams().GetVectorsConfig().GetParams().GetSize()), nil
}
