// Tokenizer: tiktoken's token counts (its ranks, counted by bpe.ts), one counter per encoding per
// process, special tokens treated as text. Implements core's Tokenizer shape. Never estimates:
// capping untrusted input is core's countCapped. This file cuts very long runs of word characters
// (no spaces or punctuation) before counting; bpe.ts bounds every other long piece the same way.

import type { Tokenizer } from '@loopline/core';
import { BpeCounter, loadRankFile } from './bpe.ts';
import { modelId } from './models.ts';

export type EncodingName = 'o200k_base' | 'cl100k_base';

export type { Tokenizer };

const encoders = new Map<EncodingName, BpeCounter>();

function encoder(name: EncodingName): BpeCounter {
  let enc = encoders.get(name);
  if (enc === undefined) {
    enc = new BpeCounter(loadRankFile(name));
    encoders.set(name, enc);
  }
  return enc;
}

// BPE cost grows with the square of a pre-token's length; real text never has runs this long
// (CJK prose: p99 18 characters), so cutting them changes a count by at most a token per cut.
const RUN_LIMIT = 512;
const RUN_PIECE = 256;
const LONG_RUN = new RegExp(`[^\\s\\p{P}\\p{S}]{${RUN_LIMIT},}`, 'gu');

function countRun(enc: BpeCounter, run: string): number {
  let total = 0;
  let i = 0;
  while (i < run.length) {
    let end = Math.min(i + RUN_PIECE, run.length);
    // Never split a surrogate pair.
    const code = run.charCodeAt(end - 1);
    if (end < run.length && code >= 0xd800 && code <= 0xdbff) end++;
    total += enc.count(run.slice(i, end));
    i = end;
  }
  return total;
}

// 1 = breaks a run (whitespace, punctuation, symbol), 2 = part of a run, 0 = not classified yet.
const BREAKS = /[\s\p{P}\p{S}]/u;
const kind = new Uint8Array(0x10000);

/**
 * False when `text` certainly has no run of RUN_LIMIT word characters: one linear pass (LONG_RUN's
 * own scan restarts at every position, ~3× tiktoken on prose); true only sends it to that exact
 * search. A surrogate counts as a run character, so no run LONG_RUN would find is missed.
 */
export function mayHaveLongRun(text: string): boolean {
  let run = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    let k = kind[code]!;
    if (k === 0) {
      k = code >= 0xd800 && code <= 0xdfff ? 2 : BREAKS.test(String.fromCharCode(code)) ? 1 : 2;
      kind[code] = k;
    }
    if (k === 1) run = 0;
    else if (++run >= RUN_LIMIT) return true;
  }
  return false;
}

function countWith(enc: BpeCounter, text: string): number {
  if (text.length < RUN_LIMIT || !mayHaveLongRun(text)) return text === '' ? 0 : enc.count(text);
  let total = 0;
  let last = 0;
  for (const m of text.matchAll(LONG_RUN)) {
    if (m.index > last) total += enc.count(text.slice(last, m.index));
    total += countRun(enc, m[0]);
    last = m.index + m[0].length;
  }
  if (last === 0) return enc.count(text);
  if (last < text.length) total += enc.count(text.slice(last));
  return total;
}

/** A tiktoken tokenizer of the given encoding. */
export function createTokenizer(encoding: EncodingName = 'o200k_base'): Tokenizer {
  const enc = encoder(encoding);
  return { name: encoding, count: (text) => countWith(enc, text) };
}

/** cl100k_base for gpt-3.5 and the original gpt-4 family; o200k_base for everything else. */
export function encodingFor(modelRef: string): EncodingName {
  const id = modelId(modelRef).toLowerCase();
  if (/^gpt-3\.5/.test(id) || /^gpt-4(-|$)/.test(id) || /^text-embedding-(3|ada)/.test(id))
    return 'cl100k_base';
  return 'o200k_base';
}

/** The tokenizer of a model reference. */
export function tokenizerFor(modelRef: string): Tokenizer {
  return createTokenizer(encodingFor(modelRef));
}
