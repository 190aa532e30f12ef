// gen.mjs writes ../reference.json.gz: token ids, type ids, tokens, byte offsets,
// sequence ids and attention masks that the Rust `tokenizers` library (the npm
// binding `tokenizers`) produces for the test tokenizers in ../ on the inputs of
// inputs.json, under every variant below. The Go parity tests compare against it.
//
//   TOKENIZERS_DIR=/tmp/tokgen node gen.mjs [/work/shared/eval]
// (TOKENIZERS_DIR is a folder where `npm install tokenizers@0.23.2` was run.)
import { createRequire } from 'node:module';
import { readFileSync, writeFileSync } from 'node:fs';
import { gunzipSync, gzipSync } from 'node:zlib';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const testdata = join(here, '..');
const require = createRequire(join(process.env.TOKENIZERS_DIR ?? process.cwd(), 'node_modules', '/'));
const { Tokenizer } = require('tokenizers');
const tkVersion = require('tokenizers/package.json').version;
const evalDir = process.argv[2] ?? '/work/shared/eval';

const inputs = JSON.parse(readFileSync(join(here, 'inputs.json'), 'utf8'));
const xquad = {
  ru: JSON.parse(readFileSync(join(evalDir, 'xquad.ru.json'), 'utf8')),
  en: JSON.parse(readFileSync(join(evalDir, 'xquad.en.json'), 'utf8')),
};
const paragraphs = [];
const questions = [];
for (const lang of ['ru', 'en']) {
  for (const [a, p] of inputs.paragraphs) {
    const par = xquad[lang].data[a].paragraphs[p];
    paragraphs.push(par.context);
    questions.push(par.qas[0].question);
  }
}

const byteFallbackPieces = [];
for (let b = 0; b < 256; b++) byteFallbackPieces.push([`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`, 0]);

const added = (id, content, o = {}) => ({
  id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true, ...o,
});
const template = (cls, sep, typeB) => ({
  type: 'TemplateProcessing',
  single: [{ SpecialToken: { id: cls, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: sep, type_id: 0 } }],
  pair: [
    { SpecialToken: { id: cls, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: sep, type_id: 0 } },
    { Sequence: { id: 'B', type_id: typeB } }, { SpecialToken: { id: sep, type_id: typeB } },
  ],
  special_tokens: {},
});

// Variants: a base file plus overrides. An override key is a dotted path into the
// JSON; its value replaces what is there, or {"$append": [...]} appends to an array.
// The Go test applies the same overrides (applyOverrides in parity_test.go).
const variants = [
  { name: 'xlmr', file: 'xlmr-mini.json.gz', full: true, pad: ['<pad>', 1], overrides: {} },
  {
    name: 'xlmr-legacy-roberta', file: 'xlmr-mini.json.gz', pad: ['<pad>', 1],
    overrides: {
      pre_tokenizer: { type: 'Metaspace', replacement: '▁', add_prefix_space: true },
      post_processor: { type: 'RobertaProcessing', sep: ['</s>', 2], cls: ['<s>', 0], trim_offsets: true, add_prefix_space: true },
    },
  },
  {
    name: 'xlmr-added-tokens', file: 'xlmr-mini.json.gz', pad: ['<pad>', 1],
    overrides: {
      added_tokens: [
        added(0, '<s>'), added(1, '<pad>'), added(2, '</s>'), added(3, '<unk>'),
        added(8001, '<mask>', { lstrip: true, rstrip: true }),
        added(8002, '[DAY]', { single_word: true, rstrip: true, special: false }),
        added(8003, 'ｍｏｎ', { single_word: true, normalized: true, special: false }),
        added(8004, 'Ёж', { normalized: true, special: false }),
      ],
    },
  },
  {
    name: 'xlmr-first-nosplit', file: 'xlmr-mini.json.gz', pad: ['<pad>', 1],
    overrides: { pre_tokenizer: { type: 'Metaspace', replacement: '▁', prepend_scheme: 'first', split: false } },
  },
  {
    name: 'xlmr-never-noprocessor', file: 'xlmr-mini.json.gz', pad: ['<pad>', 1],
    overrides: {
      pre_tokenizer: { type: 'Metaspace', replacement: '▁', prepend_scheme: 'never', split: true },
      post_processor: null,
    },
  },
  {
    name: 'xlmr-normalizers-bytefallback', file: 'xlmr-mini.json.gz', pad: ['<pad>', 1],
    overrides: {
      normalizer: {
        type: 'Sequence',
        normalizers: [
          { type: 'NFKD' }, { type: 'StripAccents' }, { type: 'Lowercase' },
          { type: 'Replace', pattern: { Regex: '[0-9]+' }, content: '0' },
          { type: 'Replace', pattern: { String: 'ß' }, content: 'ss' },
          { type: 'Strip', strip_left: true, strip_right: true },
          { type: 'NFC' },
        ],
      },
      'model.byte_fallback': true,
      'model.vocab': { $append: byteFallbackPieces },
    },
  },
  {
    name: 'xlmr-nfkc-prepend-split', file: 'xlmr-mini.json.gz', pad: ['<pad>', 1],
    overrides: {
      normalizer: {
        type: 'Sequence',
        normalizers: [
          { type: 'NFKC' },
          { type: 'Replace', pattern: { String: ' ' }, content: '▁' },
          { type: 'Prepend', prepend: '▁' },
        ],
      },
      pre_tokenizer: {
        type: 'Sequence',
        pretokenizers: [
          { type: 'Split', pattern: { Regex: '▁+' }, behavior: 'MergedWithNext', invert: false },
          { type: 'Digits', individual_digits: true },
          { type: 'Punctuation', behavior: 'MergedWithPrevious' },
        ],
      },
    },
  },
  { name: 'bert-uncased', file: 'bert-base-uncased.json.gz', full: true, pad: ['[PAD]', 0], overrides: {} },
  {
    name: 'bert-uncased-bertprocessing', file: 'bert-base-uncased.json.gz', pad: ['[PAD]', 0],
    overrides: {
      normalizer: {
        type: 'Sequence',
        normalizers: [
          { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: true, lowercase: false },
          { type: 'Lowercase' },
        ],
      },
      pre_tokenizer: {
        type: 'Sequence',
        pretokenizers: [{ type: 'WhitespaceSplit' }, { type: 'Punctuation', behavior: 'Isolated' }, { type: 'Digits', individual_digits: true }],
      },
      post_processor: { type: 'BertProcessing', sep: ['[SEP]', 102], cls: ['[CLS]', 101] },
    },
  },
  { name: 'bert-cased', file: 'bert-mini-cased.json.gz', full: true, pad: ['[PAD]', 0], overrides: {} },
  {
    name: 'bert-cased-misc', file: 'bert-mini-cased.json.gz', pad: ['[PAD]', 0],
    overrides: {
      normalizer: {
        type: 'Sequence',
        normalizers: [
          { type: 'NFKC' },
          { type: 'Replace', pattern: { String: '``' }, content: '"' },
          { type: 'Strip', strip_left: true, strip_right: true },
        ],
      },
      pre_tokenizer: {
        type: 'Sequence',
        pretokenizers: [
          { type: 'Whitespace' },
          { type: 'Digits', individual_digits: false },
          { type: 'Split', pattern: { Regex: '[-_]' }, behavior: 'MergedWithPrevious', invert: false },
          { type: 'Punctuation', behavior: 'Contiguous' },
        ],
      },
      post_processor: {
        type: 'Sequence',
        processors: [{ type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true }, template('[CLS]', '[SEP]', 1)],
      },
      'post_processor.processors.1.special_tokens': {
        '[CLS]': { id: '[CLS]', ids: [2], tokens: ['[CLS]'] },
        '[SEP]': { id: '[SEP]', ids: [3], tokens: ['[SEP]'] },
      },
      'model.max_input_chars_per_word': 20,
    },
  },
  {
    name: 'bert-cased-splits', file: 'bert-mini-cased.json.gz', pad: ['[PAD]', 0],
    overrides: {
      normalizer: { type: 'Sequence', normalizers: [{ type: 'NFD' }, { type: 'StripAccents' }, { type: 'NFC' }] },
      pre_tokenizer: {
        type: 'Sequence',
        pretokenizers: [
          { type: 'Split', pattern: { String: ' ' }, behavior: 'Removed', invert: false },
          { type: 'Split', pattern: { Regex: '\\s+' }, behavior: 'Isolated', invert: false },
          { type: 'Split', pattern: { Regex: '[^\\s]+' }, behavior: 'Removed', invert: true },
          { type: 'Punctuation', behavior: 'MergedWithNext' },
          { type: 'Punctuation', behavior: 'Removed' },
        ],
      },
    },
  },
];

function applyOverrides(doc, overrides) {
  for (const [path, value] of Object.entries(overrides)) {
    const keys = path.split('.');
    let obj = doc;
    for (const k of keys.slice(0, -1)) obj = obj[k];
    const last = keys[keys.length - 1];
    if (value && typeof value === 'object' && '$append' in value) obj[last] = obj[last].concat(value.$append);
    else obj[last] = value;
  }
  return doc;
}

// Code point offsets (what the binding reports) to UTF-8 byte offsets.
function byteOffsets(text) {
  const table = [0];
  let b = 0;
  for (const ch of text) {
    b += Buffer.byteLength(ch, 'utf8');
    table.push(b);
  }
  return table;
}

function record(enc, texts) {
  const tables = texts.map(byteOffsets);
  const seq = enc.getSequenceIds().map((s) => (s === null || s === undefined ? -1 : s));
  const offsets = enc.getOffsets().map(([s, e], i) => {
    if (seq[i] < 0) return [s, e];
    const t = tables[seq[i]];
    return [t[s], t[e]];
  });
  return {
    ids: enc.getIds(), type_ids: enc.getTypeIds(), tokens: enc.getTokens(), offsets,
    sequence_ids: seq, attention_mask: enc.getAttentionMask(),
  };
}

const strategyName = { longest_first: 'LongestFirst', only_first: 'OnlyFirst', only_second: 'OnlySecond' };

async function encodeCase(tok, c) {
  if (c.max_length) tok.setTruncation(c.max_length, { strategy: strategyName[c.strategy] });
  else tok.disableTruncation();
  try {
    const enc = c.b === undefined ? await tok.encode(c.a) : await tok.encode(c.a, c.b);
    return { ...c, ...record(enc, c.b === undefined ? [c.a] : [c.a, c.b]) };
  } catch (err) {
    return { ...c, error: String(err.message ?? err) };
  } finally {
    tok.disableTruncation();
  }
}

function cases(full) {
  const out = [];
  for (const a of inputs.texts) out.push({ a });
  for (const a of paragraphs) out.push({ a });
  const truncTexts = full ? [...paragraphs, ...inputs.texts.slice(40, 50)] : paragraphs.slice(0, 2);
  for (const a of truncTexts) {
    for (const max_length of inputs.single_max_lengths) out.push({ a, max_length, strategy: 'longest_first' });
    out.push({ a, max_length: 8, strategy: 'only_first' });
  }
  const pairs = [...inputs.pairs];
  for (let i = 0; i < paragraphs.length; i++) pairs.push([questions[i], paragraphs[i]]);
  for (let i = 40; i < 46; i += 2) pairs.push([inputs.texts[i], inputs.texts[i + 1]]);
  const maxLens = full ? inputs.pair_max_lengths : [16, 64];
  for (const [a, b] of pairs) {
    out.push({ a, b });
    for (const max_length of maxLens) {
      for (const strategy of inputs.strategies) out.push({ a, b, max_length, strategy });
    }
  }
  return out;
}

const result = { generator: `tokenizers (npm) ${tkVersion}, the Rust library's Node binding`, variants: [] };
let total = 0;
for (const v of variants) {
  const base = JSON.parse(gunzipSync(readFileSync(join(testdata, v.file))).toString('utf8'));
  const tok = Tokenizer.fromString(JSON.stringify(applyOverrides(base, v.overrides)));
  const out = { name: v.name, file: v.file, overrides: v.overrides, vocab_size: tok.getVocabSize(true), cases: [], batches: [] };
  for (const c of cases(v.full)) out.cases.push(await encodeCase(tok, c));

  const [padToken, padId] = v.pad;
  tok.setPadding({ padId, padToken });
  const texts = inputs.texts.slice(0, 30);
  out.batches.push({ texts, pad_id: padId, encodings: (await tok.encodeBatch(texts)).map((e, i) => record(e, [texts[i]])) });
  tok.setTruncation(64);
  const q = questions[0];
  const bs = paragraphs.slice(0, 4).concat(['short']);
  // The binding's encodeBatch takes no pairs: encode them one by one and pad each
  // with the library's own Encoding.pad to the longest, as batch padding does.
  tok.disablePadding();
  const pairEnc = [];
  for (const b of bs) pairEnc.push(await tok.encode(q, b));
  const longest = Math.max(...pairEnc.map((e) => e.getLength()));
  for (const e of pairEnc) e.pad(longest, { padId, padToken });
  out.batches.push({ a: q, bs, max_length: 64, strategy: 'longest_first', pad_id: padId, encodings: pairEnc.map((e, i) => record(e, [q, bs[i]])) });
  tok.disableTruncation();
  tok.disablePadding();

  total += out.cases.length;
  result.variants.push(out);
  console.error(`${v.name}: ${out.cases.length} cases, ${out.cases.filter((c) => c.error).length} errors`);
}
// Bulk: every XQuAD question and context (ru + en), ids and byte offsets only,
// for the three base tokenizers.
const bulkTexts = [];
for (const lang of ['ru', 'en']) {
  for (const art of xquad[lang].data) {
    for (const p of art.paragraphs) {
      bulkTexts.push(p.context);
      for (const q of p.qas) bulkTexts.push(q.question);
    }
  }
}
result.bulk = [];
for (const file of ['xlmr-mini.json.gz', 'bert-base-uncased.json.gz', 'bert-mini-cased.json.gz']) {
  const tok = Tokenizer.fromString(gunzipSync(readFileSync(join(testdata, file))).toString('utf8'));
  const ids = [], offsets = [];
  for (const text of bulkTexts) {
    const r = record(await tok.encode(text), [text]);
    ids.push(r.ids);
    offsets.push(r.offsets.flat());
  }
  result.bulk.push({ file, ids, offsets });
  total += bulkTexts.length;
}
result.bulk_texts = bulkTexts;
writeFileSync(join(testdata, 'reference.json.gz'), gzipSync(JSON.stringify(result), { level: 9 }));
console.error(`total ${total} cases`);
