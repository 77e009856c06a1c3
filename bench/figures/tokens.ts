import { performance } from 'node:perf_hooks';
import { type Part, partTokens } from '@loopline/core';
import { createTokenizer } from '@loopline/llm';
import { get_encoding } from 'tiktoken';
import { figureArgs } from '../lib/args.ts';
import { buildCorpora } from '../lib/corpora.ts';
import { emit, log, type Row, ratioOf } from '../lib/result.ts';
import { fmt, median, summarize } from '../lib/stats.ts';

// Token counting throughput on ~1 MiB of English, code and Chinese, cut at line ends into parts
// of about 8,000 characters (a long message or tool output). Loopline's path is what the worker
// runs for every part it writes: core's partTokens → countCapped → @loopline/llm's tokenizer
// (o200k_base; long runs without spaces cut into pieces). Ceiling: tiktoken's encode_ordinary
// on the same parts, timed part by part back to back; MB = 10^6 bytes of UTF-8.

const args = figureArgs({ runs: 5, quickRuns: 3 });
const CHUNK_CHARS = 8_000;
const started = performance.now();

function chunks(text: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < text.length) {
    let end = Math.min(text.length, i + CHUNK_CHARS);
    const nl = text.lastIndexOf('\n', end);
    if (end < text.length && nl > i + CHUNK_CHARS / 2) end = nl + 1;
    out.push(text.slice(i, end));
    i = end;
  }
  return out;
}

const tokenizer = createTokenizer('o200k_base');
const enc = get_encoding('o200k_base');
const rows: Row[] = [];
const details: string[] = [
  `Parts of about ${CHUNK_CHARS.toLocaleString('en-US')} characters cut at line ends; ${args.runs} timed passes ` +
    'over each corpus after one warm-up pass; each part is counted by both paths back to back (order alternating).',
  '',
  '| corpus | source | size | parts | tokens (Loopline / tiktoken) | Loopline MB/s | tiktoken MB/s | Loopline tokens/s |',
  '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |',
];
for (const corpus of buildCorpora()) {
  const parts = chunks(corpus.text).map(
    (text, i): Part => ({
      id: `prt_${i}`,
      sessionId: 'ses',
      messageId: 'msg',
      tokens: 0,
      type: 'text',
      text,
    }),
  );
  // One pass times every part on both paths back to back (order alternating), so that the load
  // of a shared machine falls on both alike.
  const pass = () => {
    const t = { loop: 0, raw: 0, loopTokens: 0, rawTokens: 0 };
    parts.forEach((p, i) => {
      const text = (p as { text: string }).text;
      for (const which of i % 2 === 0 ? ['raw', 'loop'] : ['loop', 'raw']) {
        const t0 = performance.now();
        if (which === 'raw') t.rawTokens += enc.encode_ordinary(text).length;
        else t.loopTokens += partTokens(p, tokenizer);
        const ms = performance.now() - t0;
        if (which === 'raw') t.raw += ms;
        else t.loop += ms;
      }
    });
    return t;
  };
  pass();
  const passes = Array.from({ length: args.runs }, pass);
  const loop = passes.map((x) => ({ ms: x.loop, tokens: x.loopTokens }));
  const raw = passes.map((x) => ({ ms: x.raw, tokens: x.rawTokens }));
  const mbps = (x: { ms: number }) => corpus.bytes / 1e6 / (x.ms / 1000);
  const l = loop.map(mbps);
  const c = raw.map(mbps);
  log(`tokens ${corpus.name}: Loopline ${fmt(median(l))} MB/s, tiktoken ${fmt(median(c))} MB/s`);
  rows.push({
    figure: `token counting, ${corpus.name}`,
    unit: 'MB/s',
    loopline: summarize(l),
    ceilingLabel: 'tiktoken encode_ordinary',
    ceiling: summarize(c),
    ratio: ratioOf(l, c),
    target: '≥ 90 %',
    met: ratioOf(l, c).median >= 0.9,
  });
  const tokensPerSecond = median(loop.map((x) => x.tokens / (x.ms / 1000)));
  details.push(
    `| ${corpus.name} | ${corpus.source} | ${fmt(corpus.bytes / 1e6)} MB | ${parts.length} | ` +
      `${loop[0]!.tokens.toLocaleString('en-US')} / ${raw[0]!.tokens.toLocaleString('en-US')} | ${fmt(median(l))} | ` +
      `${fmt(median(c))} | ${Math.round(tokensPerSecond).toLocaleString('en-US')} |`,
  );
}
enc.free();
emit({ name: 'tokens', title: 'Token counting', rows, details, elapsedMs: performance.now() - started });
process.exit(0);
