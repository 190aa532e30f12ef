'use strict';
// Asks exocortex's OpenAI-compatible door with the official `openai` npm
// client for what a client that counts tokens or wants JSON uses: a
// completion's usage, a stream with stream_options.include_usage (every
// chunk kept), response_format json_object, and json_schema (refused).
// Reads {"base_url", "question"} on stdin, writes one JSON object on
// stdout. The client's module is EXOCORTEX_OPENAI_MODULE.
const { OpenAI } = require(process.env.EXOCORTEX_OPENAI_MODULE);

async function main() {
  const input = JSON.parse(require('fs').readFileSync(0, 'utf8'));
  const client = new OpenAI({ baseURL: input.base_url, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
  const messages = [{ role: 'user', content: input.question }];
  const out = {};
  const done = await client.chat.completions.create({ model: 'exocortex', messages });
  out.completion_usage = done.usage;
  const search = await client.chat.completions.create({ model: 'exocortex-search', messages });
  out.search_usage = search.usage;
  out.search_content = search.choices[0].message.content;
  const stream = await client.chat.completions.create({ model: 'exocortex', stream: true, stream_options: { include_usage: true }, messages });
  out.chunks = [];
  for await (const chunk of stream) out.chunks.push({ choices: chunk.choices.length, usage: chunk.usage === undefined ? 'absent' : chunk.usage });
  const asJSON = await client.chat.completions.create({ model: 'exocortex', messages, response_format: { type: 'json_object' } });
  out.json_content = asJSON.choices[0].message.content;
  try {
    await client.chat.completions.create({ model: 'exocortex', messages,
      response_format: { type: 'json_schema', json_schema: { name: 'a', schema: { type: 'object' } } } });
    out.schema_error = null;
  } catch (e) {
    out.schema_error = { status: e.status, type: e.type, param: e.param, message: e.message };
  }
  process.stdout.write(JSON.stringify(out));
}

main().catch((e) => {
  console.error((e && e.stack) || String(e));
  process.exit(1);
});
