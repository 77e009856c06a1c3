// First line of defence (CONTEXT.md §3.1): a tool output over 2,000 lines or 50 KiB is cut at
// ingest to a preview, a marker and a hint naming `read_output`; the worker stores the full text.
// Also the pure reader behind `read_output` (slices and pattern search of a stored output).

import { TRUNCATE_MAX_BYTES, TRUNCATE_MAX_LINES } from '../config.ts';

export interface TruncateOptions {
  maxLines?: number;
  maxBytes?: number;
  /** `head` keeps the beginning (the default), `tail` the end (logs, test runs). */
  direction?: 'head' | 'tail';
  /** Id under which the full output is stored; the hint tells the model to read it with this id. */
  outputId: string;
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

export function readOutputHint(outputId: string, totalLines: number, totalBytes: number): string {
  return (
    `The full output (${totalLines} lines, ${totalBytes} bytes) is stored as "${outputId}". ` +
    `Use the read_output tool with id "${outputId}" and offset/limit to read other lines, ` +
    'or with pattern to search it, instead of running the tool again.'
  );
}

export function truncateToolOutput(text: string, opts: TruncateOptions): TruncateResult {
  const maxLines = opts.maxLines ?? TRUNCATE_MAX_LINES;
  const maxBytes = opts.maxBytes ?? TRUNCATE_MAX_BYTES;
  const direction = opts.direction ?? 'head';
  const lines = text.split('\n');
  const totalBytes = utf8Length(text);
  if (lines.length <= maxLines && totalBytes <= maxBytes) return { text };

  const fromEnd = direction === 'tail';
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
  const preview = kept.join('\n');
  const omittedBytes = totalBytes - bytes;
  // A partial line is kept only when nothing else fitted: count it as shown.
  const omittedLines = lines.length - kept.length;
  const marker = hitBytes ? `...${omittedBytes} bytes truncated...` : `...${omittedLines} lines truncated...`;
  const hint = readOutputHint(opts.outputId, lines.length, totalBytes);
  const out = fromEnd ? `${marker}\n\n${hint}\n\n${preview}` : `${preview}\n\n${marker}\n\n${hint}`;
  return {
    text: out,
    truncated: { totalLines: lines.length, totalBytes, direction, omittedLines, omittedBytes },
  };
}
