// build_unigram.mjs converts a SentencePiece Unigram .model (protobuf) into a
// tokenizer.json laid out exactly like the one of xlm-roberta-base /
// intfloat/multilingual-e5-small (what transformers' XLMRobertaConverter writes):
// fairseq ids (<s>=0 <pad>=1 </s>=2 <unk>=3, pieces shifted by one, <mask> last),
// normalizer Sequence[Precompiled(charsmap of the model), Replace(" {2,}" -> " ")],
// pre_tokenizer Metaspace("▁", always), TemplateProcessing "<s> $A </s>" /
// "<s> $A </s> </s> $B </s>".
//
//   node build_unigram.mjs xlmr_mini.model > xlmr-mini.json
import { readFileSync } from 'node:fs';

function reader(buf) {
  let pos = 0;
  const varint = () => {
    let x = 0n, shift = 0n;
    for (;;) {
      const b = buf[pos++];
      x |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return x;
      shift += 7n;
    }
  };
  return {
    done: () => pos >= buf.length,
    field() {
      const key = Number(varint());
      const num = key >>> 3, wire = key & 7;
      let val;
      if (wire === 0) val = varint();
      else if (wire === 1) { val = buf.subarray(pos, pos + 8); pos += 8; }
      else if (wire === 2) { const n = Number(varint()); val = buf.subarray(pos, pos + n); pos += n; }
      else if (wire === 5) { val = buf.subarray(pos, pos + 4); pos += 4; }
      else throw new Error(`wire type ${wire}`);
      return { num, wire, val };
    },
  };
}

const buf = readFileSync(process.argv[2]);
const pieces = [];
let charsmap = Buffer.alloc(0);
for (const r = reader(buf); !r.done();) {
  const f = r.field();
  if (f.num === 1) {
    const p = { piece: '', score: 0, type: 1 };
    for (const s = reader(f.val); !s.done();) {
      const g = s.field();
      if (g.num === 1) p.piece = Buffer.from(g.val).toString('utf8');
      else if (g.num === 2) p.score = Buffer.from(g.val).readFloatLE(0);
      else if (g.num === 3) p.type = Number(g.val);
    }
    pieces.push(p);
  } else if (f.num === 3) {
    for (const s = reader(f.val); !s.done();) {
      const g = s.field();
      if (g.num === 2) charsmap = Buffer.from(g.val);
    }
  }
}
if (pieces[0].piece !== '<unk>' || pieces[1].piece !== '<s>' || pieces[2].piece !== '</s>') {
  throw new Error('expected <unk> <s> </s> as the first three pieces');
}

const vocab = [['<s>', 0], ['<pad>', 0], ['</s>', 0], ['<unk>', 0]];
for (const p of pieces.slice(3)) vocab.push([p.piece, p.score]);
vocab.push(['<mask>', 0]);
const special = (id, content, extra = {}) => ({
  id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true, ...extra,
});
const metaspace = { type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true };
const tok = {
  version: '1.0',
  truncation: null,
  padding: null,
  added_tokens: [
    special(0, '<s>'), special(1, '<pad>'), special(2, '</s>'), special(3, '<unk>'),
    special(vocab.length - 1, '<mask>', { lstrip: true }),
  ],
  normalizer: {
    type: 'Sequence',
    normalizers: [
      { type: 'Precompiled', precompiled_charsmap: charsmap.toString('base64') },
      { type: 'Replace', pattern: { Regex: ' {2,}' }, content: ' ' },
    ],
  },
  pre_tokenizer: metaspace,
  post_processor: {
    type: 'TemplateProcessing',
    single: [
      { SpecialToken: { id: '<s>', type_id: 0 } },
      { Sequence: { id: 'A', type_id: 0 } },
      { SpecialToken: { id: '</s>', type_id: 0 } },
    ],
    pair: [
      { SpecialToken: { id: '<s>', type_id: 0 } },
      { Sequence: { id: 'A', type_id: 0 } },
      { SpecialToken: { id: '</s>', type_id: 0 } },
      { SpecialToken: { id: '</s>', type_id: 0 } },
      { Sequence: { id: 'B', type_id: 0 } },
      { SpecialToken: { id: '</s>', type_id: 0 } },
    ],
    special_tokens: {
      '</s>': { id: '</s>', ids: [2], tokens: ['</s>'] },
      '<s>': { id: '<s>', ids: [0], tokens: ['<s>'] },
    },
  },
  decoder: metaspace,
  model: { type: 'Unigram', unk_id: 3, vocab, byte_fallback: false },
};
process.stdout.write(JSON.stringify(tok));
