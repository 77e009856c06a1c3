// Small statistics helpers: percentiles of samples, and the median and spread of several runs.

/** A sorted copy. */
export function sorted(values: readonly number[]): number[] {
  return [...values].sort((a, b) => a - b);
}

/** Nearest-rank percentile (p in 0..100) of unsorted samples; NaN when empty. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const s = sorted(values);
  const rank = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1));
  return s[rank]!;
}

/** The median; NaN when empty. */
export const median = (values: readonly number[]): number => {
  if (values.length === 0) return Number.NaN;
  const s = sorted(values);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

/** The mean; NaN when empty. */
export const mean = (values: readonly number[]): number =>
  values.length === 0 ? Number.NaN : values.reduce((a, b) => a + b, 0) / values.length;

/** One figure over several runs: the median of the per-run values, and their min and max. */
export interface Summary {
  median: number;
  min: number;
  max: number;
  runs: number[];
}

/** The median, min and max of per-run values. */
export function summarize(runs: readonly number[]): Summary {
  return { median: median(runs), min: Math.min(...runs), max: Math.max(...runs), runs: [...runs] };
}

/** Rounds to `digits` significant decimals for display (keeps integers as they are). */
export function fmt(value: number, digits = 2): string {
  if (!Number.isFinite(value)) return 'n/a';
  const abs = Math.abs(value);
  if (abs >= 1000) return Math.round(value).toLocaleString('en-US');
  if (abs >= 100) return value.toFixed(0);
  if (abs >= 10) return value.toFixed(Math.max(0, digits - 1));
  return value.toFixed(digits);
}

/** "median (min–max)" of a summary, with a unit. */
export function fmtSummary(s: Summary, unit: string, digits = 2): string {
  const spread = s.runs.length > 1 ? ` (${fmt(s.min, digits)}–${fmt(s.max, digits)})` : '';
  return `${fmt(s.median, digits)}${unit ? ` ${unit}` : ''}${spread}`;
}
