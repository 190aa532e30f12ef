// corpus.mjs writes the training corpus for the generated test vocabularies:
// every context and question of XQuAD ru + en, one paragraph per line.
//
//   node corpus.mjs /work/shared/eval > corpus.txt
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.argv[2] ?? '/work/shared/eval';
const out = [];
for (const lang of ['ru', 'en']) {
  const doc = JSON.parse(readFileSync(join(dir, `xquad.${lang}.json`), 'utf8'));
  for (const art of doc.data) {
    for (const p of art.paragraphs) {
      out.push(p.context.replace(/\s+/g, ' ').trim());
      for (const q of p.qas) out.push(q.question.replace(/\s+/g, ' ').trim());
    }
  }
}
process.stdout.write(out.join('\n') + '\n');
