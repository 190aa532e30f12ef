package models

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/exocortex/exocortex/models/ort"
	"github.com/exocortex/exocortex/models/tokenizer"
)

// ErrNotInstalled is returned (wrapped) when a model's files are absent.
var ErrNotInstalled = errors.New("model not installed")

// Options tune how models run.
type Options struct {
	// Session options of ONNX Runtime (one intra-op thread, no spinning by default).
	Session ort.SessionOptions
	// MaxTokens caps one model run's batch × sequence length (default 8192),
	// which bounds memory and keeps padding waste low.
	MaxTokens int
	// MaxLength, when set, caps the input length below the model's own.
	MaxLength int
	// QueryWindow (cross-encoder) cuts a passage that does not fit to the
	// run of tokens around the query's words instead of keeping its head.
	QueryWindow bool
}

// RerankMaxLength is the reranker's default input length in tokens (query
// and passage, specials included): the passage is cut to fit, around the
// query's words (QueryWindow). With RerankCandidates in retrieval it keeps
// the default rerank within its latency budget on two cores.
const RerankMaxLength = 128

// RerankOptions are the defaults for the reranker: two intra-op threads
// (a query waits on it), the shorter input, and the passage window around
// the query's words.
func RerankOptions() Options {
	return Options{Session: ort.SessionOptions{IntraOpThreads: 2}, MaxLength: RerankMaxLength, QueryWindow: true}
}

func (o Options) maxTokens() int {
	if o.MaxTokens <= 0 {
		return 8192
	}
	return o.MaxTokens
}

// encoder is a transformer encoder with its tokenizer.
type encoder struct {
	spec   Spec
	name   string
	tok    *tokenizer.Tokenizer
	sess   *ort.Session
	types  bool // the model takes token_type_ids
	maxLen int
	opts   Options
}

func openEncoder(dir string, spec Spec, opts Options) (*encoder, error) {
	mdir := filepath.Join(dir, spec.Name)
	onnxPath := filepath.Join(mdir, filepath.FromSlash(spec.ONNX))
	tokPath := filepath.Join(mdir, filepath.FromSlash(spec.Tokenizer))
	for _, p := range []string{onnxPath, tokPath} {
		if _, err := os.Stat(p); err != nil {
			return nil, notInstalled(spec, p)
		}
	}
	tok, err := tokenizer.Load(tokPath)
	if err != nil {
		return nil, fmt.Errorf("%s model %s: tokenizer: %w", spec.Role, spec.Name, err)
	}
	sess, err := ort.Open(onnxPath, opts.Session)
	if err != nil {
		return nil, fmt.Errorf("%s model %s: %w", spec.Role, spec.Name, err)
	}
	for _, in := range []string{"input_ids", "attention_mask"} {
		if !sess.HasInput(in) {
			sess.Close()
			return nil, fmt.Errorf("%s model %s: %s has no %q input (inputs: %v)", spec.Role, spec.Name, onnxPath, in, sess.Inputs())
		}
	}
	maxLen := spec.MaxLength
	if maxLen <= 0 {
		maxLen = 512
	}
	if opts.MaxLength > 0 && opts.MaxLength < maxLen {
		maxLen = opts.MaxLength
	}
	return &encoder{spec: spec, name: ID(dir, spec), tok: tok, sess: sess,
		types: sess.HasInput("token_type_ids"), maxLen: maxLen, opts: opts}, nil
}

// notInstalled says that file p of spec is missing and how to get it.
func notInstalled(spec Spec, p string) error {
	fetch := "exocortex models fetch"
	if spec.Optional {
		fetch += " --with " + spec.Role
	}
	return fmt.Errorf("%s model %s: %w: %s is missing (run %s, or set --models)", spec.Role, spec.Name, ErrNotInstalled, p, fetch)
}

// ID names a model and its weights ("multilingual-e5-small@dd476dd0c251"):
// what vectors and caches are keyed by.
func ID(dir string, spec Spec) string { return spec.Name + "@" + fingerprint(spec, dir) }

// fingerprint names the weights: the pinned (or locked) digest of the ONNX
// file, so vectors cached by one machine are valid on another with the same
// model, and a model swap changes the name.
func fingerprint(spec Spec, dir string) string {
	for _, f := range spec.Files {
		if f.Path == spec.ONNX && f.SHA256 != "" {
			return f.SHA256[:12]
		}
	}
	if d := readLock(filepath.Join(dir, spec.Name)).Files[spec.ONNX]; d != "" {
		return d[:12]
	}
	// Neither pinned nor locked (a hand-placed model): the file's own digest.
	if d, _, err := fileDigest(filepath.Join(dir, spec.Name, filepath.FromSlash(spec.ONNX))); err == nil {
		return d[:12]
	}
	sum := sha256.Sum256([]byte(spec.Repo + "@" + spec.Revision))
	return hex.EncodeToString(sum[:6])
}

// run feeds a batch of encodings (already padded to one length) to the model.
func (e *encoder) run(encs []tokenizer.Encoding, outputs ...string) (map[string]ort.Float32Tensor, int, error) {
	return e.runContext(context.Background(), encs, outputs...)
}

// runContext is run, stopped mid-run when ctx is done (ort.Session.RunContext).
func (e *encoder) runContext(ctx context.Context, encs []tokenizer.Encoding, outputs ...string) (map[string]ort.Float32Tensor, int, error) {
	b, s := len(encs), len(encs[0].IDs)
	ids := make([]int64, 0, b*s)
	mask := make([]int64, 0, b*s)
	var types []int64
	for _, enc := range encs {
		ids = append(ids, enc.IDs...)
		mask = append(mask, enc.AttentionMask...)
		if e.types {
			types = append(types, enc.TypeIDs...)
		}
	}
	shape := []int64{int64(b), int64(s)}
	in := map[string]ort.Int64Tensor{"input_ids": {Shape: shape, Data: ids}, "attention_mask": {Shape: shape, Data: mask}}
	if e.types {
		in["token_type_ids"] = ort.Int64Tensor{Shape: shape, Data: types}
	}
	out, err := e.sess.RunContext(ctx, in, outputs...)
	return out, s, err
}

// batches groups item indices by token length so each run pads little and
// stays within the token budget; longest first.
func (e *encoder) batches(lengths []int) [][]int {
	idx := make([]int, len(lengths))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return lengths[idx[a]] > lengths[idx[b]] })
	var out [][]int
	budget := e.opts.maxTokens()
	for lo := 0; lo < len(idx); {
		n := max(1, budget/max(1, lengths[idx[lo]]))
		hi := min(len(idx), lo+n)
		out = append(out, idx[lo:hi])
		lo = hi
	}
	return out
}

func (e *encoder) close() error { return e.sess.Close() }

// Embedder is a sentence-embedding model (e5 and its kind): mean pooling
// over the attention mask of last_hidden_state, then L2 normalisation.
type Embedder struct {
	*encoder
	dim int
}

// OpenEmbedder loads the embedding model of spec from the models directory.
func OpenEmbedder(dir string, spec Spec, opts Options) (*Embedder, error) {
	enc, err := openEncoder(dir, spec, opts)
	if err != nil {
		return nil, err
	}
	if !enc.sess.HasOutput("last_hidden_state") {
		enc.close()
		return nil, fmt.Errorf("embed model %s: no last_hidden_state output (outputs: %v)", spec.Name, enc.sess.Outputs())
	}
	return &Embedder{encoder: enc, dim: spec.Dim}, nil
}

// Name is the model's name and weights fingerprint.
func (e *Embedder) Name() string { return e.name }

// Dim is the vector size.
func (e *Embedder) Dim() int { return e.dim }

// Close releases the session.
func (e *Embedder) Close() error { return e.close() }

// EmbedQuery embeds one query with the model's query prefix.
func (e *Embedder) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	v, err := e.embed(ctx, []string{e.spec.QueryPrefix + text})
	if err != nil {
		return nil, err
	}
	return v[0], nil
}

// EmbedPassages embeds passages with the model's passage prefix.
func (e *Embedder) EmbedPassages(ctx context.Context, texts []string) ([][]float32, error) {
	in := make([]string, len(texts))
	for i, t := range texts {
		in[i] = e.spec.PassagePrefix + t
	}
	return e.embed(ctx, in)
}

func (e *Embedder) embed(ctx context.Context, texts []string) ([][]float32, error) {
	tr := tokenizer.Truncation{MaxLength: e.maxLen}
	encs := make([]tokenizer.Encoding, len(texts))
	lengths := make([]int, len(texts))
	for i, t := range texts {
		encs[i] = e.tok.Encode(t, tr)
		lengths[i] = len(encs[i].IDs)
	}
	out := make([][]float32, len(texts))
	for _, group := range e.batches(lengths) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		batch := pad(encs, group, e.tok)
		res, seq, err := e.run(batch, "last_hidden_state")
		if err != nil {
			return nil, fmt.Errorf("embed model %s: %w", e.spec.Name, err)
		}
		h := res["last_hidden_state"]
		if len(h.Shape) != 3 || int(h.Shape[2]) != e.dim {
			return nil, fmt.Errorf("embed model %s: last_hidden_state has shape %v, want [%d %d %d]", e.spec.Name, h.Shape, len(group), seq, e.dim)
		}
		for k, i := range group {
			out[i] = meanPool(h.Data[k*seq*e.dim:(k+1)*seq*e.dim], batch[k].AttentionMask, e.dim)
		}
	}
	return out, nil
}

// pad copies the encodings of group, padded to the longest with mask 0.
func pad(encs []tokenizer.Encoding, group []int, tok *tokenizer.Tokenizer) []tokenizer.Encoding {
	longest := 0
	for _, i := range group {
		longest = max(longest, len(encs[i].IDs))
	}
	padID := padID(tok)
	out := make([]tokenizer.Encoding, len(group))
	for k, i := range group {
		e := encs[i]
		n := len(e.IDs)
		ids := make([]int64, longest)
		mask := make([]int64, longest)
		types := make([]int64, longest)
		copy(ids, e.IDs)
		copy(mask, e.AttentionMask)
		copy(types, e.TypeIDs)
		for j := n; j < longest; j++ {
			ids[j] = padID
		}
		out[k] = tokenizer.Encoding{IDs: ids, AttentionMask: mask, TypeIDs: types}
	}
	return out
}

// padID is the tokenizer's padding token (<pad> for XLM-R, [PAD] for BERT).
func padID(tok *tokenizer.Tokenizer) int64 {
	for _, p := range []string{"<pad>", "[PAD]"} {
		if id, ok := tok.TokenID(p); ok {
			return id
		}
	}
	return 0
}

// meanPool averages the hidden states of the tokens the mask keeps and
// normalises the result to unit length.
func meanPool(h []float32, mask []int64, dim int) []float32 {
	v := make([]float32, dim)
	n := 0
	for t, m := range mask {
		if m == 0 {
			continue
		}
		n++
		row := h[t*dim : (t+1)*dim]
		for j, x := range row {
			v[j] += x
		}
	}
	var norm float64
	for j := range v {
		v[j] /= float32(max(n, 1))
		norm += float64(v[j]) * float64(v[j])
	}
	if norm > 0 {
		inv := float32(1 / math.Sqrt(norm))
		for j := range v {
			v[j] *= inv
		}
	}
	return v
}

// CrossEncoder scores (query, passage) pairs with a sequence-classification
// model (output "logits", one relevance logit per pair).
type CrossEncoder struct {
	*encoder
}

// OpenCrossEncoder loads the reranking model of spec from the models directory.
func OpenCrossEncoder(dir string, spec Spec, opts Options) (*CrossEncoder, error) {
	enc, err := openEncoder(dir, spec, opts)
	if err != nil {
		return nil, err
	}
	if !enc.sess.HasOutput("logits") {
		enc.close()
		return nil, fmt.Errorf("rerank model %s: no logits output (outputs: %v)", spec.Name, enc.sess.Outputs())
	}
	return &CrossEncoder{encoder: enc}, nil
}

// Name is the model's name and weights fingerprint.
func (c *CrossEncoder) Name() string { return c.name }

// Close releases the session.
func (c *CrossEncoder) Close() error { return c.close() }

// Score returns one relevance score per passage (the model's logit: higher
// is more relevant). The passage is truncated to fit, never the query.
func (c *CrossEncoder) Score(ctx context.Context, query string, passages []string) ([]float32, error) {
	if len(passages) == 0 {
		return nil, nil
	}
	encs, lengths := c.encodePairs(query, passages)
	out := make([]float32, len(passages))
	for _, group := range c.batches(lengths) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		res, _, err := c.run(pad(encs, group, c.tok), "logits")
		if err != nil {
			return nil, fmt.Errorf("rerank model %s: %w", c.spec.Name, err)
		}
		l := res["logits"]
		per := 1
		if len(l.Shape) == 2 {
			per = int(l.Shape[1])
		}
		if len(l.Data) != per*len(group) {
			return nil, fmt.Errorf("rerank model %s: logits of shape %v for %d pairs", c.spec.Name, l.Shape, len(group))
		}
		for k, i := range group {
			// One logit: the relevance. Two (not relevant, relevant): their difference.
			if per == 1 {
				out[i] = l.Data[k]
			} else {
				out[i] = l.Data[k*per+per-1] - l.Data[k*per]
			}
		}
	}
	return out, nil
}

// encodePairs encodes (query, passage) pairs unpadded (batches pad them to
// their own longest), the passage truncated to fit, never the query. With
// Options.QueryWindow the part of a passage kept is the one around the
// query's words (see windowOf), else its head.
func (e *encoder) encodePairs(query string, passages []string) ([]tokenizer.Encoding, []int) {
	encs, lengths, _ := e.encodeWindows(query, passages)
	return encs, lengths
}

// encodeWindows is encodePairs that also returns the text each passage was
// encoded from (the passage or its window).
func (e *encoder) encodeWindows(query string, passages []string) ([]tokenizer.Encoding, []int, []string) {
	tr := tokenizer.Truncation{MaxLength: e.maxLen, Strategy: tokenizer.OnlySecond}
	var keys map[string]int
	if e.opts.QueryWindow {
		keys = queryKeys(query)
	}
	encs := make([]tokenizer.Encoding, len(passages))
	lengths := make([]int, len(passages))
	texts := append([]string(nil), passages...)
	for i, p := range passages {
		encs[i] = e.tok.EncodePair(query, p, tr)
		if len(keys) > 0 {
			room := 0
			for _, s := range encs[i].SequenceIDs {
				if s == 1 {
					room++
				}
			}
			if w := windowPassage(e.tok, keys, p, room); w != p {
				encs[i], texts[i] = e.tok.EncodePair(query, w, tr), w
			}
		}
		lengths[i] = len(encs[i].IDs)
	}
	return encs, lengths, texts
}

// Windows returns the part of each passage the cross-encoder reads with
// query: the whole passage when the pair fits its input, else the window
// Options.QueryWindow picks (or the head without it). For tests and
// diagnostics.
func (c *CrossEncoder) Windows(query string, passages []string) []string {
	encs, _, texts := c.encodeWindows(query, passages)
	out := make([]string, len(encs))
	for i, enc := range encs {
		lo, hi := -1, -1
		for j, s := range enc.SequenceIDs {
			if s == 1 {
				if lo < 0 {
					lo = enc.Offsets[j][0]
				}
				hi = enc.Offsets[j][1]
			}
		}
		if lo >= 0 {
			out[i] = texts[i][lo:hi]
		}
	}
	return out
}

// LazyCrossEncoder opens the reranker on first use and closes it after it
// has been idle for a while, so a machine that rarely reranks does not keep
// the model in memory.
type LazyCrossEncoder struct {
	lazy[*CrossEncoder]
}

// NewLazyCrossEncoder returns a reranker that loads spec from dir when first
// asked and unloads it after idle without use (0 means never).
func NewLazyCrossEncoder(dir string, spec Spec, opts Options, idle time.Duration) *LazyCrossEncoder {
	return &LazyCrossEncoder{newLazy(ID(dir, spec), idle, func() (*CrossEncoder, error) { return OpenCrossEncoder(dir, spec, opts) })}
}

// Score loads the model if needed and scores the pairs.
func (l *LazyCrossEncoder) Score(ctx context.Context, query string, passages []string) ([]float32, error) {
	ce, err := l.acquire()
	if err != nil {
		return nil, err
	}
	defer l.release()
	return ce.Score(ctx, query, passages)
}

// lazy holds a model that is opened on first use and closed once it has
// been idle for a while (the lazy reranker and entailment model).
type lazy[M interface{ Close() error }] struct {
	open func() (M, error)
	idle time.Duration
	name string

	mu     sync.Mutex
	m      M
	loaded bool
	users  int
	last   time.Time
	timer  *time.Timer
	loads  int
}

func newLazy[M interface{ Close() error }](name string, idle time.Duration, open func() (M, error)) lazy[M] {
	return lazy[M]{open: open, idle: idle, name: name}
}

// Name is the model's name and weights fingerprint.
func (l *lazy[M]) Name() string { return l.name }

// Loaded reports whether the model is in memory, and how many times it was loaded.
func (l *lazy[M]) Loaded() (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.loaded, l.loads
}

// acquire opens the model if it is not loaded and holds it in memory until
// the matching release.
func (l *lazy[M]) acquire() (M, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.loaded {
		m, err := l.open()
		if err != nil {
			var zero M
			return zero, err
		}
		l.m, l.loaded = m, true
		l.loads++
	}
	l.users++
	return l.m, nil
}

func (l *lazy[M]) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.users--
	l.last = time.Now()
	if l.idle <= 0 || l.users > 0 {
		return
	}
	if l.timer != nil {
		l.timer.Stop()
	}
	l.timer = time.AfterFunc(l.idle, l.unloadIfIdle)
}

func (l *lazy[M]) unloadIfIdle() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.loaded || l.users > 0 || time.Since(l.last) < l.idle {
		return
	}
	_ = l.m.Close()
	var zero M
	l.m, l.loaded = zero, false
}

// Close unloads the model.
func (l *lazy[M]) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.timer != nil {
		l.timer.Stop()
	}
	if !l.loaded {
		return nil
	}
	err := l.m.Close()
	var zero M
	l.m, l.loaded = zero, false
	return err
}
