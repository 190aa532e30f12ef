// Package tokenizer is a pure-Go implementation of the Hugging Face
// tokenizers pipeline, read from a standard tokenizer.json: the
// XLM-RoBERTa SentencePiece Unigram tokenizer of multilingual-e5, mMiniLM
// rerankers and xlm-roberta QA models, and BERT-style WordPiece tokenizers.
//
// Encode runs the same steps as the HF library, in the same order, and
// gives the same ids, type ids and offsets (checked against the library on
// the test data in testdata/):
//
//  1. added tokens (special tokens such as "<mask>") are cut out of the raw
//     text, or, for "normalized" ones, out of the normalized text;
//  2. the normalizer rewrites the text (Precompiled SentencePiece charsmap,
//     Replace, NFC/NFD/NFKC/NFKD, Lowercase, Strip, StripAccents,
//     BertNormalizer, Prepend, Sequence), keeping for every byte the span of
//     the original text it came from;
//  3. the pre-tokenizer cuts it into words (Metaspace, Whitespace,
//     WhitespaceSplit, BertPreTokenizer, Punctuation, Digits, Split,
//     CharDelimiterSplit, Sequence);
//  4. the model turns every word into tokens (Unigram, WordPiece);
//  5. truncation, then the post-processor adds the special tokens
//     (TemplateProcessing, RobertaProcessing, BertProcessing, ByteLevel
//     offset trimming, Sequence); batches are padded to the longest.
//
// Other component types make Load fail with an error that wraps
// ErrUnsupported and names the type and its JSON path.
//
// Truncation is what the caller passes (the file's own truncation section
// is not used) and follows the library exactly, including its habit of
// tokenizing each sequence only until it holds MaxLength tokens, which
// decides how longest_first shares the room of a pair. Batches are padded
// to the longest, with the pad id, type id, token, side and
// pad_to_multiple_of of the file's padding section, else with "<pad>" or
// "[PAD]".
//
// Known differences from the HF library: Split and Replace regexes run on
// Go's RE2 (\s, \w and \d get their Unicode meaning; look-around is not
// supported) where the library uses Oniguruma; grapheme clusters (used by
// the Precompiled normalizer) follow Unicode 15 without the Indic conjunct
// rule; Stride is ignored and no overflowing windows are produced; padding
// always has sequence id -1; where the library returns an error
// (only_first/only_second cannot fit, a Unigram model without unk_id meets
// an unknown character) Encode falls back to longest_first or drops the
// character; MaxLength below the number of special tokens leaves only the
// special tokens (the library's unsigned arithmetic wraps there).
package tokenizer
