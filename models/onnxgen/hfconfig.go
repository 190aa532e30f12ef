package onnxgen

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// HFConfig returns the config.json that the Hugging Face library writes
// beside a model of cfg's architecture, with id2label and label2id naming
// the classifier's outputs in order (labels[i] is output i). An exported
// classifier's label order is read from this file (an NLI model's
// entailment, neutral and contradiction come in different orders in
// different exports), so a test model needs one.
func HFConfig(cfg Config, labels []string) ([]byte, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Head == HeadClassifier && len(labels) != cfg.labels() {
		return nil, fmt.Errorf("onnxgen: %d labels for a classifier of %d outputs", len(labels), cfg.labels())
	}
	arch, kind := "XLMRobertaModel", "xlm-roberta"
	switch {
	case cfg.Positions == AbsolutePositions:
		arch, kind = "BertModel", "bert"
	case cfg.Head == HeadClassifier:
		arch = "XLMRobertaForSequenceClassification"
	case cfg.Head == HeadQA:
		arch = "XLMRobertaForQuestionAnswering"
	}
	c := map[string]any{
		"architectures":           []string{arch},
		"model_type":              kind,
		"vocab_size":              cfg.Vocab,
		"hidden_size":             cfg.Hidden,
		"num_hidden_layers":       cfg.Layers,
		"num_attention_heads":     cfg.Heads,
		"intermediate_size":       cfg.Intermediate,
		"max_position_embeddings": cfg.MaxPositions,
		"type_vocab_size":         cfg.TypeVocab,
		"pad_token_id":            cfg.PadTokenID,
		"layer_norm_eps":          cfg.eps(),
		"hidden_act":              "gelu",
		"_generated_by":           "exocortex onnxgen (random weights)",
	}
	if len(labels) > 0 {
		id2label := map[string]string{}
		label2id := map[string]int{}
		for i, l := range labels {
			id2label[strconv.Itoa(i)] = l
			label2id[l] = i
		}
		c["id2label"], c["label2id"] = id2label, label2id
	}
	raw, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(raw, '\n'), nil
}
