package models

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/exocortex/exocortex/models/tokenizer"
)

// Entailment is what an NLI model says of a (premise, hypothesis) pair: the
// probabilities that the premise entails the hypothesis, says nothing either
// way about it, or contradicts it. They sum to 1.
type Entailment struct {
	Entail, Neutral, Contradict float32
}

// NLI is a natural language inference cross-encoder (a sequence classifier
// over (premise, hypothesis) pairs with three outputs, such as
// multilingual-MiniLMv2-L6-mnli-xnli). Which output is which is read from
// the model's config.json (id2label): exports differ in their order
// (roberta-large-mnli's is contradiction, neutral, entailment).
type NLI struct {
	*encoder
	// at holds the logit index of entailment, neutral and contradiction.
	at [3]int
}

// NLI label kinds, in the order of Entailment's fields.
const (
	nliEntail = iota
	nliNeutral
	nliContradict
)

// OpenNLI loads the entailment model of spec from the models directory.
// Without its files it returns an error wrapping ErrNotInstalled that names
// the missing file and the command that fetches it.
func OpenNLI(dir string, spec Spec, opts Options) (*NLI, error) {
	if spec.Config == "" {
		return nil, fmt.Errorf("%s model %s: the manifest names no config (its config.json, for the label order)", spec.Role, spec.Name)
	}
	cfgPath := filepath.Join(dir, spec.Name, filepath.FromSlash(spec.Config))
	if _, err := os.Stat(cfgPath); err != nil {
		return nil, notInstalled(spec, cfgPath)
	}
	at, err := readNLILabels(cfgPath)
	if err != nil {
		return nil, fmt.Errorf("%s model %s: %w", spec.Role, spec.Name, err)
	}
	enc, err := openEncoder(dir, spec, opts)
	if err != nil {
		return nil, err
	}
	if !enc.sess.HasOutput("logits") {
		enc.close()
		return nil, fmt.Errorf("%s model %s: no logits output (outputs: %v)", spec.Role, spec.Name, enc.sess.Outputs())
	}
	for _, o := range enc.sess.Outputs() {
		if o.Name == "logits" && len(o.Dims) == 2 && o.Dims[1] > 0 && o.Dims[1] != 3 {
			enc.close()
			return nil, fmt.Errorf("%s model %s: logits has %d classes, an NLI model has 3 (entailment, neutral, contradiction)", spec.Role, spec.Name, o.Dims[1])
		}
	}
	return &NLI{encoder: enc, at: at}, nil
}

// readNLILabels reads id2label from a config.json and returns the output
// index of entailment, neutral and contradiction.
func readNLILabels(path string) ([3]int, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return [3]int{}, err
	}
	return parseNLILabels(raw, path)
}

func parseNLILabels(raw []byte, path string) ([3]int, error) {
	var at [3]int
	var cfg struct {
		ID2Label map[string]string `json:"id2label"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return at, fmt.Errorf("%s: %w", path, err)
	}
	if len(cfg.ID2Label) != 3 {
		return at, fmt.Errorf("%s: id2label has %d labels (%v), an NLI model has 3: entailment, neutral, contradiction", path, len(cfg.ID2Label), cfg.ID2Label)
	}
	seen := [3]bool{}
	ids := make([]string, 0, 3)
	for id := range cfg.ID2Label {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		label := cfg.ID2Label[id]
		i, err := strconv.Atoi(id)
		if err != nil || i < 0 || i > 2 {
			return at, fmt.Errorf("%s: id2label has id %q, want 0, 1 and 2", path, id)
		}
		kind := nliKind(label)
		if kind < 0 {
			return at, fmt.Errorf("%s: id2label %s is %q, not entailment, neutral or contradiction", path, id, label)
		}
		if seen[kind] {
			return at, fmt.Errorf("%s: id2label names %q twice (%v)", path, label, cfg.ID2Label)
		}
		seen[kind] = true
		at[kind] = i
	}
	return at, nil
}

// nliKind maps a label name ("entailment", "ENTAILMENT", "neutral",
// "contradiction", ...) to its kind; -1 for any other ("not_entailment" of
// two-class models, "LABEL_0").
func nliKind(label string) int {
	l := strings.ToLower(strings.TrimSpace(label))
	switch {
	case strings.HasPrefix(l, "entail"):
		return nliEntail
	case l == "neutral":
		return nliNeutral
	case strings.HasPrefix(l, "contradict"):
		return nliContradict
	}
	return -1
}

// Name is the model's name and weights fingerprint.
func (n *NLI) Name() string { return n.name }

// Close releases the session.
func (n *NLI) Close() error { return n.close() }

// Score returns, for each i, what the model says of premise i (a note's
// block) and hypothesis i (a claim about it). A pair longer than the model's
// input keeps the whole hypothesis and the part of the premise around the
// hypothesis's words (see windowOf), never the premise's head alone. Pairs
// are batched by length.
func (n *NLI) Score(ctx context.Context, premises, hypotheses []string) ([]Entailment, error) {
	if len(premises) != len(hypotheses) {
		return nil, fmt.Errorf("%s model %s: %d premises for %d hypotheses", n.spec.Role, n.spec.Name, len(premises), len(hypotheses))
	}
	if len(premises) == 0 {
		return nil, nil
	}
	encs := make([]tokenizer.Encoding, len(premises))
	lengths := make([]int, len(premises))
	for i := range premises {
		encs[i] = n.encodePair(premises[i], hypotheses[i])
		lengths[i] = len(encs[i].IDs)
	}
	out := make([]Entailment, len(premises))
	for _, group := range n.batches(lengths) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		res, _, err := n.run(pad(encs, group, n.tok), "logits")
		if err != nil {
			return nil, fmt.Errorf("%s model %s: %w", n.spec.Role, n.spec.Name, err)
		}
		l := res["logits"]
		if len(l.Shape) != 2 || l.Shape[1] != 3 || len(l.Data) != 3*len(group) {
			return nil, fmt.Errorf("%s model %s: logits of shape %v for %d pairs, want [%d 3]", n.spec.Role, n.spec.Name, l.Shape, len(group), len(group))
		}
		for k, i := range group {
			p := softmax3(l.Data[3*k : 3*k+3])
			out[i] = Entailment{Entail: p[n.at[nliEntail]], Neutral: p[n.at[nliNeutral]], Contradict: p[n.at[nliContradict]]}
		}
	}
	return out, nil
}

// encodePair encodes (premise, hypothesis), cutting the premise only; when
// it was cut, the part kept is the window around the hypothesis's words.
func (n *NLI) encodePair(premise, hypothesis string) tokenizer.Encoding {
	tr := tokenizer.Truncation{MaxLength: n.maxLen, Strategy: tokenizer.OnlyFirst}
	enc := n.tok.EncodePair(premise, hypothesis, tr)
	if len(enc.IDs) < n.maxLen {
		return enc // nothing was cut
	}
	room := 0
	for _, s := range enc.SequenceIDs {
		if s == 0 {
			room++
		}
	}
	if w := windowPassage(n.tok, queryKeys(hypothesis), premise, room); w != premise {
		enc = n.tok.EncodePair(w, hypothesis, tr)
	}
	return enc
}

func softmax3(x []float32) [3]float32 {
	m := math.Max(float64(x[0]), math.Max(float64(x[1]), float64(x[2])))
	var e [3]float64
	var z float64
	for i := range e {
		e[i] = math.Exp(float64(x[i]) - m)
		z += e[i]
	}
	return [3]float32{float32(e[0] / z), float32(e[1] / z), float32(e[2] / z)}
}

// LazyNLI opens the entailment model on first use and closes it after it
// has been idle for a while, as LazyCrossEncoder does the reranker.
type LazyNLI struct {
	lazy[*NLI]
}

// NewLazyNLI returns an entailment model that loads spec from dir when first
// asked and unloads it after idle without use (0 means never). Nothing is
// read before the first Score: a missing model is reported then.
func NewLazyNLI(dir string, spec Spec, opts Options, idle time.Duration) *LazyNLI {
	return &LazyNLI{newLazy(ID(dir, spec), idle, func() (*NLI, error) { return OpenNLI(dir, spec, opts) })}
}

// InstalledNLI returns the lazy entailment model of the manifest m when
// it names one and all its files are in dir; otherwise nil and false (the
// entailment check is off, which is no error: the model is optional).
func InstalledNLI(dir string, m Manifest, opts Options, idle time.Duration) (*LazyNLI, bool) {
	spec, ok := m.Spec(RoleNLI)
	if !ok || !Installed(dir, spec) {
		return nil, false
	}
	return NewLazyNLI(dir, spec, opts, idle), true
}

// Score loads the model if needed and scores the pairs (see NLI.Score).
func (l *LazyNLI) Score(ctx context.Context, premises, hypotheses []string) ([]Entailment, error) {
	n, err := l.acquire()
	if err != nil {
		return nil, err
	}
	defer l.release()
	return n.Score(ctx, premises, hypotheses)
}
