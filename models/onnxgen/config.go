package onnxgen

import (
	"errors"
	"fmt"
)

// Head is what sits on top of the encoder, and so which outputs the model
// has.
type Head int

const (
	// HeadHidden is feature extraction: output "last_hidden_state"
	// [batch_size, sequence_length, hidden] (the embedder).
	HeadHidden Head = iota
	// HeadClassifier is a cross-encoder's sequence classification head, as in
	// XLM-R: the first token's state -> dense -> tanh -> dense to Labels
	// scores. Output "logits" [batch_size, Labels]: one for the reranker,
	// three for an NLI model.
	HeadClassifier
	// HeadQA is extractive question answering: a dense layer to two scores per
	// token. Outputs "start_logits" and "end_logits" [batch_size,
	// sequence_length] (the reader).
	HeadQA
)

func (h Head) String() string {
	switch h {
	case HeadHidden:
		return "hidden"
	case HeadClassifier:
		return "classifier"
	case HeadQA:
		return "qa"
	}
	return fmt.Sprintf("head(%d)", int(h))
}

// Outputs returns the names of the model's outputs for this head.
func (h Head) Outputs() []string {
	switch h {
	case HeadHidden:
		return []string{"last_hidden_state"}
	case HeadClassifier:
		return []string{"logits"}
	case HeadQA:
		return []string{"start_logits", "end_logits"}
	}
	return nil
}

// Positions is how position ids are made from the input.
type Positions int

const (
	// AbsolutePositions are BERT's: 0, 1, ..., sequence_length-1 for every
	// row (multilingual-e5-small is a BertModel).
	AbsolutePositions Positions = iota
	// PaddingAwarePositions are RoBERTa's and XLM-R's: tokens that are not
	// PadTokenID are numbered from PadTokenID+1 on, padding tokens get
	// PadTokenID. Hence max positions 514 for 512 tokens.
	PaddingAwarePositions
)

// Config describes a BERT / XLM-R style encoder.
type Config struct {
	Vocab        int // rows of the word embedding table
	Hidden       int
	Layers       int
	Heads        int // attention heads; must divide Hidden
	Intermediate int // the feed-forward layer's width
	MaxPositions int // rows of the position embedding table
	TypeVocab    int // rows of the token type embedding table

	// TokenTypeInput gives the model a "token_type_ids" input; without it the
	// first token type embedding is added to every token.
	TokenTypeInput bool
	Positions      Positions
	// PadTokenID is the padding token, used by PaddingAwarePositions.
	PadTokenID int
	// LayerNormEps is LayerNormalization's epsilon; 0 means 1e-12 (BERT's).
	LayerNormEps float32

	Head Head
	// Labels is the number of the classifier head's outputs; 0 means 1 (a
	// reranker's one score). Other heads ignore it.
	Labels int

	// Quantized makes the model what onnxruntime.quantization.quantize_dynamic
	// makes of it (per tensor, int8 weights): every MatMul with a constant
	// weight becomes DynamicQuantizeLinear + MatMulInteger + Cast + Mul by the
	// product of the scales, and every embedding table is stored as uint8 and
	// read through Gather + DequantizeLinear.
	Quantized bool

	// Seed picks the random weights; the same config always gives the same
	// bytes.
	Seed int64
}

// E5Small has the architecture of intfloat/multilingual-e5-small as exported
// to int8 ONNX: a BertModel (absolute positions, token type ids, 512
// positions) with XLM-R's vocabulary, quantized.
func E5Small() Config {
	return Config{
		Vocab:          250037,
		Hidden:         384,
		Layers:         12,
		Heads:          12,
		Intermediate:   1536,
		MaxPositions:   512,
		TypeVocab:      2,
		TokenTypeInput: true,
		Positions:      AbsolutePositions,
		PadTokenID:     0,
		LayerNormEps:   1e-12,
		Head:           HeadHidden,
		Quantized:      true,
		Seed:           1,
	}
}

// MiniLMReranker has the architecture of
// cross-encoder/mmarco-mMiniLMv2-L12-H384-v1: an XLM-R style encoder
// (XLMRobertaForSequenceClassification) with one output score per pair.
func MiniLMReranker() Config {
	return Config{
		Vocab:          250002,
		Hidden:         384,
		Layers:         12,
		Heads:          12,
		Intermediate:   1536,
		MaxPositions:   514,
		TypeVocab:      1,
		TokenTypeInput: false,
		Positions:      PaddingAwarePositions,
		PadTokenID:     1,
		LayerNormEps:   1e-5,
		Head:           HeadClassifier,
		Seed:           1,
	}
}

// MiniLMNLI has the architecture of
// MoritzLaurer/multilingual-MiniLMv2-L6-mnli-xnli as its author exported it
// to ONNX (fp32): the reranker's mMiniLMv2-H384 encoder with 6 layers and a
// classifier of three logits (entailment, neutral, contradiction).
func MiniLMNLI() Config {
	c := MiniLMReranker()
	c.Layers = 6
	c.Labels = 3
	return c
}

// XLMRBaseQA has the architecture of deepset/xlm-roberta-base-squad2
// (XLMRobertaForQuestionAnswering).
func XLMRBaseQA() Config {
	return Config{
		Vocab:          250002,
		Hidden:         768,
		Layers:         12,
		Heads:          12,
		Intermediate:   3072,
		MaxPositions:   514,
		TypeVocab:      1,
		TokenTypeInput: false,
		Positions:      PaddingAwarePositions,
		PadTokenID:     1,
		LayerNormEps:   1e-5,
		Head:           HeadQA,
		Seed:           1,
	}
}

// Tiny is a two-layer, 32-wide model for tests, with the inputs, outputs and
// position scheme of the preset for the head: HeadHidden is shaped like
// E5Small (with token_type_ids), the others like the XLM-R presets. It is not
// quantized, so that its outputs do not depend on what else is in the batch.
func Tiny(h Head, vocab int) Config {
	c := MiniLMReranker()
	if h == HeadHidden {
		c = E5Small()
	}
	c.Vocab = vocab
	c.Hidden = 32
	c.Layers = 2
	c.Heads = 4
	c.Intermediate = 64
	c.MaxPositions = 514
	c.Head = h
	c.Quantized = false
	return c
}

// WithVocab returns c with a vocabulary of n tokens. The word embedding table
// is the bulk of a small model's bytes while the time to look up a row does
// not depend on its size, so benchmarks may shrink it.
func (c Config) WithVocab(n int) Config {
	c.Vocab = n
	return c
}

// maxModelBytes is protobuf's limit on one message, which ONNX Runtime
// enforces on a model without external data.
const maxModelBytes = 2<<30 - 1

// Validate reports every problem of c at once.
func (c Config) Validate() error {
	var errs []error
	positive := func(name string, v int) {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("onnxgen: %s is %d, must be positive", name, v))
		}
	}
	positive("vocab", c.Vocab)
	positive("hidden", c.Hidden)
	positive("layers", c.Layers)
	positive("heads", c.Heads)
	positive("intermediate", c.Intermediate)
	positive("max positions", c.MaxPositions)
	positive("type vocab", c.TypeVocab)
	if c.Heads > 0 && c.Hidden%c.Heads != 0 {
		errs = append(errs, fmt.Errorf("onnxgen: %d heads do not divide hidden size %d", c.Heads, c.Hidden))
	}
	switch c.Positions {
	case AbsolutePositions:
	case PaddingAwarePositions:
		if c.PadTokenID < 0 || c.PadTokenID >= c.Vocab {
			errs = append(errs, fmt.Errorf("onnxgen: pad token id %d is outside the vocabulary of %d", c.PadTokenID, c.Vocab))
		}
		if c.MaxPositions <= c.PadTokenID+1 {
			errs = append(errs, fmt.Errorf("onnxgen: max positions %d leave no room after pad token id %d", c.MaxPositions, c.PadTokenID))
		}
	default:
		errs = append(errs, fmt.Errorf("onnxgen: unknown positions %d", int(c.Positions)))
	}
	if c.LayerNormEps < 0 {
		errs = append(errs, fmt.Errorf("onnxgen: layer norm epsilon %g is negative", c.LayerNormEps))
	}
	if c.Head.Outputs() == nil {
		errs = append(errs, fmt.Errorf("onnxgen: unknown head %d", int(c.Head)))
	}
	if c.Labels < 0 {
		errs = append(errs, fmt.Errorf("onnxgen: labels is %d, must not be negative", c.Labels))
	}
	if len(errs) == 0 {
		if n := c.approxBytes(); n > maxModelBytes {
			errs = append(errs, fmt.Errorf("onnxgen: the model would take about %d MiB, over ONNX's 2 GiB limit; shrink the vocabulary with WithVocab", n>>20))
		}
	}
	return errors.Join(errs...)
}

// approxBytes estimates the size of the model's weights.
func (c Config) approxBytes() int64 {
	per := int64(4)
	if c.Quantized {
		per = 1
	}
	h, i := int64(c.Hidden), int64(c.Intermediate)
	emb := (int64(c.Vocab) + int64(c.MaxPositions) + int64(c.TypeVocab)) * h * per
	layer := (4*h*h+2*h*i)*per + (4*h+i+4*h)*4
	return emb + int64(c.Layers)*layer + 2*h*h*4 + h*int64(c.labels())*4
}

// labels is the classifier head's number of outputs.
func (c Config) labels() int {
	if c.Labels <= 0 {
		return 1
	}
	return c.Labels
}

func (c Config) eps() float32 {
	if c.LayerNormEps == 0 {
		return 1e-12
	}
	return c.LayerNormEps
}
