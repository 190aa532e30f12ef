package models

import (
	"context"
	"fmt"
	"math"

	"github.com/exocortex/exocortex/models/tokenizer"
)

// QA is an extractive question-answering model (the SQuAD 2.0 signature of
// an ONNX export of deepset/xlm-roberta-base-squad2, the default's: inputs
// input_ids and attention_mask, token_type_ids when the graph has it;
// outputs start_logits and end_logits per token). It finds the span of a
// context that answers a question.
type QA struct {
	*encoder
}

// Span is the best answer found in one context.
type Span struct {
	// Context is the index of the context the span was found in.
	Context int
	// Text is Context[Start:End] (byte offsets into that context).
	Text       string
	Start, End int
	// Score is the span's probability (start times end, each a softmax over
	// the context's tokens and the no-answer position); NoAnswer is the
	// probability the model gives to "no answer in this context".
	Score, NoAnswer float64
}

// OpenQA loads the extractive QA model of spec from the models directory.
func OpenQA(dir string, spec Spec, opts Options) (*QA, error) {
	enc, err := openEncoder(dir, spec, opts)
	if err != nil {
		return nil, err
	}
	for _, out := range []string{"start_logits", "end_logits"} {
		if !enc.sess.HasOutput(out) {
			enc.close()
			return nil, fmt.Errorf("qa model %s: no %s output (outputs: %v)", spec.Name, out, enc.sess.Outputs())
		}
	}
	return &QA{encoder: enc}, nil
}

// Name is the model's name and weights fingerprint.
func (q *QA) Name() string { return q.name }

// Close releases the session.
func (q *QA) Close() error { return q.close() }

// Tokens is how many tokens the model reads for the question and each
// context (special tokens included, a long context cut to the model's
// length): what a run costs grows with it.
func (q *QA) Tokens(question string, contexts []string) []int {
	_, lengths := q.encodePairs(question, contexts)
	return lengths
}

// Answer returns the best span of each context for the question, in the
// order of contexts; a context too long for the model is read up to the
// model's length. maxTokens bounds a span's length in tokens (default 30).
// When ctx is done the model stops mid-run (ONNX Runtime's terminate flag)
// and the error wraps ctx's error.
func (q *QA) Answer(ctx context.Context, question string, contexts []string, maxTokens int) ([]Span, error) {
	if maxTokens <= 0 {
		maxTokens = 30
	}
	if len(contexts) == 0 {
		return nil, nil
	}
	encs, lengths := q.encodePairs(question, contexts)
	out := make([]Span, len(contexts))
	for _, group := range q.batches(lengths) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		batch := pad(encs, group, q.tok)
		res, seq, err := q.runContext(ctx, batch, "start_logits", "end_logits")
		if err != nil {
			return nil, fmt.Errorf("qa model %s: %w", q.spec.Name, err)
		}
		st, en := res["start_logits"], res["end_logits"]
		if len(st.Data) != len(group)*seq || len(en.Data) != len(group)*seq {
			return nil, fmt.Errorf("qa model %s: logits of shape %v and %v for %d x %d tokens", q.spec.Name, st.Shape, en.Shape, len(group), seq)
		}
		for k, i := range group {
			out[i] = bestSpan(encs[i], contexts[i], st.Data[k*seq:(k+1)*seq], en.Data[k*seq:(k+1)*seq], maxTokens)
			out[i].Context = i
		}
	}
	return out, nil
}

// bestSpan picks the context span with the highest start x end probability.
func bestSpan(e tokenizer.Encoding, context string, start, end []float32, maxTokens int) Span {
	// Softmax over the context's tokens plus the first (no-answer) position.
	keep := []int{0}
	for t, s := range e.SequenceIDs {
		if s == 1 {
			keep = append(keep, t)
		}
	}
	ps, pe := softmaxAt(start, keep), softmaxAt(end, keep)
	span := Span{NoAnswer: ps[0] * pe[0]}
	best := -1.0
	for a := 1; a < len(keep); a++ {
		for b := a; b < len(keep) && b-a < maxTokens; b++ {
			if p := ps[a] * pe[b]; p > best {
				from, to := e.Offsets[keep[a]][0], e.Offsets[keep[b]][1]
				if from >= to || to > len(context) {
					continue
				}
				best = p
				span.Start, span.End, span.Score = from, to, p
			}
		}
	}
	if best >= 0 {
		span.Text = context[span.Start:span.End]
	}
	return span
}

func softmaxAt(logits []float32, at []int) []float64 {
	m := math.Inf(-1)
	for _, t := range at {
		m = math.Max(m, float64(logits[t]))
	}
	out := make([]float64, len(at))
	var z float64
	for i, t := range at {
		out[i] = math.Exp(float64(logits[t]) - m)
		z += out[i]
	}
	for i := range out {
		out[i] /= z
	}
	return out
}
