import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { createTokenizer, type EncodingName } from '@loopline/llm';
import { get_encoding } from 'tiktoken';
import { fixtureLines } from './lib/fixtures.ts';

// Loopline's token counts against tiktoken's own WASM engine, on every string of recorded
// conversations: `node bench/tokenizer-check.ts [file.jsonl[.gz] …]` (default: the vendored
// fixtures). Prints mismatches (none expected) and the time each engine took.

const files = process.argv.slice(2);
const lines = files.length
  ? files.flatMap((f) => {
      const raw = readFileSync(f);
      return (f.endsWith('.gz') ? gunzipSync(raw) : raw).toString('utf8').split('\n');
    })
  : fixtureLines();

const texts: string[] = [];
const collect = (v: unknown): void => {
  if (typeof v === 'string') texts.push(v);
  else if (Array.isArray(v)) for (const x of v) collect(x);
  else if (v !== null && typeof v === 'object') {
    for (const x of Object.values(v)) collect(x);
    texts.push(JSON.stringify(v));
  }
};
for (const line of lines) if (line.trim() !== '') collect(JSON.parse(line));
const chars = texts.reduce((n, t) => n + t.length, 0);

let failed = 0;
for (const name of ['o200k_base', 'cl100k_base'] as EncodingName[]) {
  const ours = createTokenizer(name);
  const ref = get_encoding(name);
  let t = performance.now();
  const a = texts.map((x) => ours.count(x));
  const oursMs = performance.now() - t;
  t = performance.now();
  const b = texts.map((x) => ref.encode_ordinary(x).length);
  const refMs = performance.now() - t;
  let mismatches = 0;
  a.forEach((n, i) => {
    if (n === b[i]) return;
    // Texts with runs of 512 word characters are cut on purpose (tokenizer.ts): not compared.
    if (/[^\s\p{P}\p{S}]{512,}/u.test(texts[i]!)) return;
    mismatches++;
    if (mismatches <= 5)
      process.stdout.write(`${name} mismatch: ${n} vs ${b[i]}: ${JSON.stringify(texts[i]!.slice(0, 120))}\n`);
  });
  failed += mismatches;
  const tokens = b.reduce((x, y) => x + y, 0);
  process.stdout.write(
    `${name}: ${texts.length} texts, ${chars} chars, ${tokens} tokens, ${mismatches} mismatches; ` +
      `Loopline ${oursMs.toFixed(0)} ms, tiktoken WASM ${refMs.toFixed(0)} ms\n`,
  );
  ref.free();
}
process.exit(failed === 0 ? 0 : 1);
