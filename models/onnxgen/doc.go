// Package onnxgen writes ONNX models of BERT and XLM-R style encoders with
// random weights and the real models' signatures: the inputs input_ids,
// attention_mask and (optionally) token_type_ids, int64 [batch_size,
// sequence_length], and the outputs of a feature extractor, a cross-encoder
// or an extractive QA model.
//
// Tests use Tiny models (about 170 KB with a vocabulary of 100) in place of
// model weights this machine does not have; benchmarks use the presets
// (E5Small, MiniLMReranker, XLMRBaseQA), which have the real architectures'
// sizes and so their speed. The graphs use ONNX opset 17 (LayerNormalization)
// and are laid out the way the PyTorch exporter lays out a Hugging Face
// BertModel or XLMRobertaModel, so ONNX Runtime applies the same fusions to
// them (SkipLayerNormalization, BiasGelu or Gelu, DynamicQuantizeMatMul). Its
// online Attention fusion only matches opset 13 and older graphs, so it
// applies to neither these nor an opset 14+ export.
//
// The protobuf is written by hand (google.golang.org/protobuf/encoding/protowire),
// and weights come from a seeded generator: the same Config gives the same
// bytes.
package onnxgen
