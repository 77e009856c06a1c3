import { type Summary, summarize } from './stats.ts';

// What a figure script hands back to the runner: table rows (Loopline, ceiling, ratio, target)
// and free-form markdown details. Printed on stdout as one `RESULT <json>` line.

export interface Row {
  figure: string;
  unit: string;
  loopline: Summary;
  ceilingLabel?: string;
  ceiling?: Summary;
  /** Per-run ratios loopline/ceiling (or as the figure defines it), summarised. */
  ratio?: Summary;
  target: string;
  /** null: no target to judge (informational row). */
  met: boolean | null;
  note?: string;
}

export interface FigureResult {
  name: string;
  title: string;
  rows: Row[];
  /** Markdown lines for the details section of RESULTS.md. */
  details: string[];
  elapsedMs: number;
}

/** The summary of the per-run ratios a[i] / b[i]. */
export function ratioOf(a: readonly number[], b: readonly number[]): Summary {
  return summarize(a.map((x, i) => x / b[i]!));
}

/** Prints the figure's result line on stdout. */
export function emit(result: FigureResult): void {
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
}

/** Progress lines go to stderr so that stdout carries only the result. */
export function log(...parts: unknown[]): void {
  process.stderr.write(`${parts.map(String).join(' ')}\n`);
}
