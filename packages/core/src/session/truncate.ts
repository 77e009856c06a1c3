// First line of defence (docs/context.md, "Truncate at ingest"): a tool output over 2,000 lines
// or 50 KiB — or over its share of the usable window in tokens, whichever is smaller — is cut at
// ingest to a preview, a marker and a hint naming `read_output`; the worker stores the full text.

import {
  type ModelLimits,
  type ToolOutputConfig,
  TRUNCATE_MAX_BYTES,
  TRUNCATE_MAX_LINES,
  TRUNCATE_WINDOW_SHARE,
} from '../config.ts';
import { type BudgetConfig, contextBudget } from './overflow.ts';
import { countCapped, EXACT_COUNT_CAP_CHARS, type Tokenizer } from './tokens.ts';

export interface TruncateOptions {
  maxLines?: number;
  maxBytes?: number;
  /** `head` keeps the beginning (the default), `tail` the end (logs, test runs). */
  direction?: 'head' | 'tail';
  /** Id under which the full output is stored; the hint tells the model to read it with this id. */
  outputId: string;
  /**
   * Token cap of the whole result (preview, marker and hint), counted exactly with `tokenizer`:
   * the window's share (ingestTokenCap). Ignored without a tokenizer.
   */
  maxTokens?: number | undefined;
  tokenizer?: Tokenizer | undefined;
}

export interface TruncationInfo {
  totalLines: number;
  totalBytes: number;
  direction: 'head' | 'tail';
  omittedLines: number;
  omittedBytes: number;
}

export interface TruncateResult {
  text: string;
  /**
   * The exact count of `text` (countCapped with the options' tokenizer) when the token cap made the
   * truncation count it anyway: the caller stores it instead of tokenizing the same text again.
   */
  tokens?: number;
  truncated?: TruncationInfo;
}

// charCodeAt past either end is NaN, which is neither.
const isHigh = (code: number) => code >= 0xd800 && code <= 0xdbff;
const isLow = (code: number) => code >= 0xdc00 && code <= 0xdfff;

/** UTF-8 byte length without allocating a copy (outputs can be megabytes). */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (isHigh(code) && isLow(text.charCodeAt(i + 1))) {
      bytes += 4; // a surrogate pair is one 4-byte code point
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/** The longest prefix (or suffix) of `text` whose UTF-8 encoding fits `maxBytes`, on a code point boundary. */
function fitBytes(text: string, maxBytes: number, fromEnd: boolean): string {
  let bytes = 0;
  let i = fromEnd ? text.length : 0;
  while (fromEnd ? i > 0 : i < text.length) {
    // One code point: a surrogate pair when the unit at hand is one of its halves.
    const at = fromEnd ? i - 1 : i;
    const code = text.charCodeAt(at);
    const pair = fromEnd
      ? isLow(code) && isHigh(text.charCodeAt(at - 1))
      : isHigh(code) && isLow(text.charCodeAt(at + 1));
    const width = pair ? 2 : 1;
    const size = width === 2 ? 4 : code < 0x80 ? 1 : code < 0x800 ? 2 : 3;
    if (bytes + size > maxBytes) break;
    bytes += size;
    i += fromEnd ? -width : width;
  }
  return fromEnd ? text.slice(i) : text.slice(0, i);
}

/** The note appended to a truncated output: where the full text is and how to read it. */
export function readOutputHint(outputId: string, totalLines: number, totalBytes: number): string {
  return (
    `The full output (${totalLines} lines, ${totalBytes} bytes) is stored as "${outputId}". ` +
    `Use the read_output tool with id "${outputId}" and offset/limit to read other lines, ` +
    'or with pattern to search it, instead of running the tool again.'
  );
}

/** Cuts a tool output to its line, byte and token caps, with the read_output hint. */
export function truncateToolOutput(text: string, opts: TruncateOptions): TruncateResult {
  const maxLines = opts.maxLines ?? TRUNCATE_MAX_LINES;
  const maxBytes = opts.maxBytes ?? TRUNCATE_MAX_BYTES;
  const direction = opts.direction ?? 'head';
  const fromEnd = direction === 'tail';
  const lines = text.split('\n');
  const totalBytes = utf8Length(text);
  const cap = opts.tokenizer ? opts.maxTokens : undefined;
  // A token covers at least one byte: an output within the cap in bytes is within it in tokens.
  // `counted` keeps the count of the last text measured, for TruncateResult.tokens.
  let counted: { text: string; tokens: number } | undefined;
  const overTokens = (t: string, bytes: number) => {
    if (cap === undefined || bytes <= cap) return false;
    counted = { text: t, tokens: countCapped(opts.tokenizer!, t) };
    return counted.tokens > cap;
  };
  const result = (out: string, truncated?: TruncationInfo): TruncateResult => ({
    text: out,
    ...(counted?.text === out ? { tokens: counted.tokens } : {}),
    ...(truncated ? { truncated } : {}),
  });
  if (lines.length <= maxLines && totalBytes <= maxBytes && !overTokens(text, totalBytes))
    return result(text);

  const kept: string[] = [];
  let bytes = 0;
  let hitBytes = false;
  for (let i = 0; i < lines.length && kept.length < maxLines; i++) {
    const line = lines[fromEnd ? lines.length - 1 - i : i]!;
    const size = utf8Length(line) + (kept.length > 0 ? 1 : 0);
    if (bytes + size > maxBytes) {
      hitBytes = true;
      // A single huge line (minified JSON) still gets a preview: as much of it as fits.
      if (kept.length === 0) {
        const part = fitBytes(line, maxBytes, fromEnd);
        kept.push(part);
        bytes = utf8Length(part);
      }
      break;
    }
    kept.push(line);
    bytes += size;
  }
  if (fromEnd) kept.reverse();
  let preview = kept.join('\n');
  let keptLines = kept.length;
  const hint = readOutputHint(opts.outputId, lines.length, totalBytes);
  const render = (shown: string, shownBytes: number, shownLines: number, byBytes: boolean) => {
    const marker = byBytes
      ? `...${totalBytes - shownBytes} bytes truncated...`
      : `...${lines.length - shownLines} lines truncated...`;
    return fromEnd ? `${marker}\n\n${hint}\n\n${shown}` : `${shown}\n\n${marker}\n\n${hint}`;
  };
  let out = render(preview, bytes, keptLines, hitBytes);
  if (cap !== undefined && overTokens(out, utf8Length(out))) {
    // The window's share is the tighter cap: keep the longest preview whose result fits it.
    const tokenizer = opts.tokenizer!;
    let budget = cap - tokenizer.count(render('', 0, 0, true));
    for (let tries = 0; tries < 4; tries++) {
      preview = fitTokens(preview, Math.max(0, budget), tokenizer, fromEnd);
      bytes = utf8Length(preview);
      keptLines = preview === '' ? 0 : preview.split('\n').length;
      out = render(preview, bytes, keptLines, true);
      // Counted as the part will be (countCapped): exact up to the cap, estimated past it, so a
      // preview of megabytes costs a bounded count however often this loop runs.
      const tokens = countCapped(tokenizer, out);
      counted = { text: out, tokens };
      const over = tokens - cap;
      if (over <= 0 || preview === '') break;
      budget -= over; // tokens merged differently at the joins: shrink by the excess and retry
    }
    hitBytes = true;
  }
  return result(out, {
    totalLines: lines.length,
    totalBytes,
    direction,
    // A partial line is kept only when nothing else fitted: count it as shown.
    omittedLines: lines.length - keptLines,
    omittedBytes: totalBytes - bytes,
  });
}

/**
 * The longest prefix (or suffix) of `text` within `maxTokens`, counted as countCapped counts: a
 * binary search on the length over the exactly counted range, then back to a line boundary when one
 * is in reach (whole lines read better). Past the exact-count cap a count is an estimate anyway, so
 * a longer fit is cut in proportion instead: a binary search of exact counts over megabytes (a
 * tenant's 4 MiB answer against a cap just below it) held the event loop for seconds.
 */
function fitTokens(text: string, maxTokens: number, tokenizer: Tokenizer, fromEnd: boolean): string {
  const slice = (n: number) => (fromEnd ? text.slice(text.length - n) : text.slice(0, n));
  const total = countCapped(tokenizer, text);
  if (total <= maxTokens) return text;
  // A token rarely spans more than 16 characters: no fit is longer than this.
  const longest = Math.min(text.length, maxTokens * 16);
  let n =
    longest > EXACT_COUNT_CAP_CHARS
      ? // In proportion, a little short (the caller checks the result and shrinks by any excess).
        Math.floor((text.length * maxTokens * 0.98) / total)
      : longestWithin(longest, maxTokens, (m) => tokenizer.count(slice(m)));
  // Never split a surrogate pair.
  const edge = fromEnd ? text.charCodeAt(text.length - n) : text.charCodeAt(n - 1);
  if (n > 0 && (fromEnd ? isLow(edge) : isHigh(edge))) n--;
  const cut = slice(n);
  const nl = fromEnd ? cut.indexOf('\n') : cut.lastIndexOf('\n');
  if (nl > 0 && nl < cut.length - 1) return fromEnd ? cut.slice(nl + 1) : cut.slice(0, nl);
  return cut;
}

/** The largest length in [0, hi] whose count is within `maxTokens` (counts grow with the length). */
function longestWithin(hi: number, maxTokens: number, count: (length: number) => number): number {
  let lo = 0;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (count(mid) <= maxTokens) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/**
 * The token cap of one tool output after truncation: `windowShare` of the usable window
 * (contextBudget().usable), or undefined when the window is unknown.
 */
export function ingestTokenCap(usable: number, windowShare: number): number | undefined {
  return usable > 0 ? Math.max(1, Math.floor(usable * windowShare)) : undefined;
}

/** The agent's ingest token cap: its tool outputs' share of its usable window (no cap without limits). */
export function ingestCap(agent: {
  limits?: ModelLimits | undefined;
  compaction?: BudgetConfig | undefined;
  toolOutput?: Partial<Pick<ToolOutputConfig, 'windowShare'>> | undefined;
}): number | undefined {
  if (!agent.limits || agent.limits.context <= 0) return undefined;
  const { usable } = contextBudget(agent.limits, agent.compaction);
  return ingestTokenCap(usable, agent.toolOutput?.windowShare ?? TRUNCATE_WINDOW_SHARE);
}
