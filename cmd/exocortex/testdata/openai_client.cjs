'use strict';
// Asks exocortex's OpenAI-compatible door with the official `openai` npm
// client, as a chat UI would: every question once with stream: true
// (every content delta kept, in order, and the last chunk's extra fields)
// and once without. Reads {"base_url", "questions": [...]} on stdin, writes
// one JSON array on stdout. The client's module is EXOCORTEX_OPENAI_MODULE
// (the test installs it with npm).
const { OpenAI } = require(process.env.EXOCORTEX_OPENAI_MODULE);

async function ask(client, question) {
  const r = { question, deltas: [], finish_reason: null, final: null, completion: null, error: null };
  const messages = [{ role: 'user', content: question }];
  try {
    const stream = await client.chat.completions.create({ model: 'exocortex', stream: true, messages });
    for await (const chunk of stream) {
      const c = chunk.choices && chunk.choices[0];
      if (!c) continue;
      if (c.delta && typeof c.delta.content === 'string' && c.delta.content !== '') r.deltas.push(c.delta.content);
      if (c.finish_reason) {
        r.finish_reason = c.finish_reason;
        r.final = { citations: chunk.citations || [], exocortex: chunk.exocortex || null };
      }
    }
    const done = await client.chat.completions.create({ model: 'exocortex', messages });
    r.completion = { content: done.choices[0].message.content, citations: done.citations || [], exocortex: done.exocortex || null };
  } catch (e) {
    r.error = String((e && e.stack) || e);
  }
  return r;
}

async function main() {
  const input = JSON.parse(require('fs').readFileSync(0, 'utf8'));
  const client = new OpenAI({ baseURL: input.base_url, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
  const out = [];
  for (const q of input.questions) out.push(await ask(client, q));
  process.stdout.write(JSON.stringify(out));
}

main().catch((e) => {
  console.error((e && e.stack) || String(e));
  process.exit(1);
});
