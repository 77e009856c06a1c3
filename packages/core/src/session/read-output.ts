// The pure half of the built-in `read_output` tool: numbered line slices and pattern search over a
// stored full tool output. Its own answer is bounded (lines, line length, bytes, matches) so
// reading a huge output never recreates the problem truncation solved.

import { TRUNCATE_MAX_BYTES, TRUNCATE_MAX_LINES } from '../config.ts';
import { utf8Length } from './truncate.ts';

export interface ReadOutputOptions {
  /** Lines to skip (0-based): `offset: 2000` starts at line 2,001. */
  offset?: number;
  /** Lines to return (slice) or matches to return (search); at most 2,000. */
  limit?: number;
  /** A regular expression (JavaScript syntax, run in linear time); else a literal substring. */
  pattern?: string;
  /**
   * Asked before each line a search tests: true stops it there, the answer saying where to go on
   * (the worker passes a time budget: a search runs on the event loop every session shares).
   */
  stop?: () => boolean;
}

export const READ_LINE_MAX_CHARS = 2_000;
export const READ_DEFAULT_MATCHES = 100;
/** A longer pattern is searched for literally: the linear engine's cost per character grows with it. */
export const READ_PATTERN_MAX_CHARS = 256;
/**
 * The linear engine's work on one line is about the pattern's length times the line's (some
 * 0.5 µs a unit for the worst patterns): a line is tested up to this many units, so one line never
 * holds the event loop much past a quarter of a second.
 */
export const READ_REGEX_LINE_WORK = 500_000;

function clip(line: string): string {
  return line.length > READ_LINE_MAX_CHARS
    ? `${line.slice(0, READ_LINE_MAX_CHARS)}... (line truncated, ${line.length} chars)`
    : line;
}

function numbered(n: number, width: number, line: string): string {
  return `${String(n).padStart(width, ' ')}| ${clip(line)}`;
}

// The model writes the pattern, and a tenant's endpoint writes the model's calls: a backtracking
// regex engine would let `(a|a)*b` over one line of `aaa…` block the worker's event loop for
// minutes (and the step re-run on the next worker). So a pattern runs only on V8's linear-time
// engine (the `l` flag, which the worker enables at start: apps/worker/src/tools/read-output.ts);
// what that engine cannot run (backreferences, lookahead), or every pattern where it is not
// enabled, is searched for literally. Never the backtracking engine.
let linearEngine: boolean | undefined;

/** Whether this process's V8 accepts the `l` (linear-time) RegExp flag. */
export function linearRegexAvailable(): boolean {
  if (linearEngine === undefined) {
    // A literal with the flag would be a syntax error of the whole file where the engine is off.
    const flags = 'l';
    try {
      new RegExp('', flags);
      linearEngine = true;
    } catch {
      linearEngine = false;
    }
  }
  return linearEngine;
}

/**
 * A matcher for `pattern`: the regex on the linear-time engine when it compiles there, else a
 * substring test. `linear`: whether the engine is there (this process's V8, unless a test says).
 */
export function compilePattern(pattern: string, linear = linearRegexAvailable()): (line: string) => boolean {
  if (linear && pattern.length <= READ_PATTERN_MAX_CHARS) {
    try {
      const re = new RegExp(pattern, 'l');
      // Each line is cut so that testing it stays within READ_REGEX_LINE_WORK.
      const cut = Math.min(
        10 * READ_LINE_MAX_CHARS,
        Math.floor(READ_REGEX_LINE_WORK / Math.max(1, pattern.length)),
      );
      return (line) => re.test(line.length > cut ? line.slice(0, cut) : line);
    } catch {
      // not a valid regex, or not one the linear engine can run: a literal search
    }
  }
  return (line) => line.includes(pattern);
}

/** The read_output answer: numbered lines from an offset, or the lines matching a pattern. */
export function readOutputSlice(content: string, opts: ReadOutputOptions = {}): string {
  const lines = content.split('\n');
  const width = String(lines.length).length;
  const offset = Math.max(0, Math.floor(opts.offset ?? 0));
  if (opts.pattern !== undefined && opts.pattern !== '') return search(lines, width, offset, opts);
  if (offset >= lines.length)
    return `(Offset ${offset} is past the end: the output has ${lines.length} lines.)`;
  const limit = Math.min(TRUNCATE_MAX_LINES, Math.max(1, Math.floor(opts.limit ?? TRUNCATE_MAX_LINES)));
  const out: string[] = [];
  let bytes = 0;
  let i = offset;
  for (; i < lines.length && i < offset + limit; i++) {
    const row = numbered(i + 1, width, lines[i]!);
    const size = utf8Length(row) + 1;
    if (bytes + size > TRUNCATE_MAX_BYTES && out.length > 0) break;
    bytes += size;
    out.push(row);
  }
  const footer =
    i < lines.length
      ? `(Lines ${offset + 1}-${i} of ${lines.length}. Use offset=${i} to read more.)`
      : `(End of output: ${lines.length} lines.)`;
  return `${out.join('\n')}\n\n${footer}`;
}

function search(lines: string[], width: number, offset: number, opts: ReadOutputOptions): string {
  const pattern = opts.pattern!;
  const test = compilePattern(pattern);
  const limit = Math.min(TRUNCATE_MAX_LINES, Math.max(1, Math.floor(opts.limit ?? READ_DEFAULT_MATCHES)));
  const out: string[] = [];
  let bytes = 0;
  let total = 0;
  let lastShown = offset;
  let full = false;
  let stoppedAt: number | undefined;
  for (let i = offset; i < lines.length; i++) {
    if (opts.stop?.()) {
      stoppedAt = i;
      break;
    }
    if (!test(lines[i]!)) continue;
    total++;
    if (full || out.length >= limit) continue; // keep counting matches only
    const row = numbered(i + 1, width, lines[i]!);
    const size = utf8Length(row) + 1;
    if (bytes + size > TRUNCATE_MAX_BYTES && out.length > 0) {
      full = true;
      continue;
    }
    bytes += size;
    out.push(row);
    lastShown = i + 1;
  }
  if (stoppedAt !== undefined)
    return (
      `${out.length > 0 ? `${out.join('\n')}\n\n` : ''}(The search stopped after line ${stoppedAt} (its time budget): ` +
      `${total} matching lines so far, showing ${out.length}. Use offset=${stoppedAt} to search on.)`
    );
  if (total === 0) return `(No lines match ${JSON.stringify(pattern)} after line ${offset}.)`;
  const footer =
    out.length < total
      ? `(${total} matching lines; showing ${out.length}. Use offset=${lastShown} to see matches after line ${lastShown}.)`
      : `(${total} matching lines.)`;
  return `${out.join('\n')}\n\n${footer}`;
}

/**
 * The definition the model is given for `read_output` (offered when there is a truncated output to read: task.ts hasReadableOutput). The worker sends it;
 * the gateway counts it in the request overhead, so both measure the same request.
 */
export const READ_OUTPUT_TOOL = {
  name: 'read_output',
  description:
    'Read a tool output that was truncated. Pass the outputId from the truncation notice, and either offset/limit (line numbers, 0-based) to page through it, or a pattern (regular expression) to list matching lines.',
  inputSchema: {
    type: 'object',
    properties: {
      outputId: { type: 'string', description: 'The id given in the truncation notice' },
      offset: { type: 'integer', minimum: 0, description: 'First line to read (0-based)' },
      limit: { type: 'integer', minimum: 1, maximum: 2000, description: 'Number of lines to read' },
      pattern: { type: 'string', description: 'Regular expression to search for' },
    },
    required: ['outputId'],
    additionalProperties: false,
  },
} as const;
