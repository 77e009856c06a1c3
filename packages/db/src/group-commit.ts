import { isConnectionError } from './connection-errors.ts';

// Group commit (docs/decisions.md D39, D40): at most `concurrency` statements of one kind run at
// once; what arrives while they are all busy waits for the next one to finish, and everything
// that waited then goes in ONE statement (one socket write, one commit). There is no timer: alone,
// an item is written at once by its single statement; batches form only when items would
// otherwise queue for a connection. Under load the statements' socket writes (each wakes a
// PostgreSQL backend) and commits are most of what a service and PostgreSQL spend per item.
//
// Order: first come, first written. A batch holds one item per key (a session); a key's later
// items wait for a later batch, behind its earlier ones. A failed batch wrote nothing (one
// statement, one transaction): when PostgreSQL refused it, each item is written again on its own,
// so one bad item fails alone; when the connection failed, nobody can tell whether it committed,
// and every item of it gets that error, as a single statement's caller would.

export interface GroupCommitOptions {
  /** Statements in flight at once. */
  concurrency: number;
  /** Items per statement at most; 1 turns batching off (every item its own statement). */
  maxBatch: number;
}

/** One item's outcome in a batch statement: its own error fails it alone. */
export type Settled<R> = { value: R } | { error: unknown };

/** A promise's outcome as a Settled (a batch function that runs a lone item by its single statement). */
export function settle<R>(p: Promise<R>): Promise<Settled<R>> {
  return p.then(
    (value) => ({ value }),
    (error) => ({ error }),
  );
}

/** What a kind of statement needs for group commit. */
export interface GroupCommitStatements<I, R> {
  /** Items of one key never share a statement (the session: its row is written once per batch). */
  key(item: I): string;
  /** Only items of the same shape share a statement (one statement text per shape); default one. */
  shape?(item: I): string;
  /** About how many characters an item adds to a statement; with maxChars, bounds its size. */
  chars?(item: I): number;
  /** Characters one statement carries at most (the first item always goes). */
  maxChars?: number;
  /** Throws for an item no statement may write: it fails alone, before it can join a batch. */
  check?(item: I): void;
  /** The item's own statement. */
  one(item: I): Promise<R>;
  /** Several items (distinct keys, one shape) in one statement: outcomes in item order. */
  many(items: readonly I[]): Promise<Array<Settled<R>>>;
}

interface Waiting<I, R> {
  item: I;
  key: string;
  shape: string;
  chars: number;
  resolve(result: R): void;
  reject(err: unknown): void;
}

/** Positive integer options; one left undefined (or NaN) by an embedder is the default, never NaN. */
export function groupCommitOptions(
  opts: Partial<GroupCommitOptions>,
  defaults: GroupCommitOptions,
): GroupCommitOptions {
  const count = (n: number | undefined, fallback: number) =>
    n !== undefined && Number.isFinite(n) ? Math.max(1, Math.floor(n)) : fallback;
  return {
    concurrency: count(opts.concurrency, defaults.concurrency),
    maxBatch: count(opts.maxBatch, defaults.maxBatch),
  };
}

/** Runs items alone when a statement slot is free, in batches when they would queue. */
export class GroupCommit<I, R> {
  private running = 0;
  private waiting: Waiting<I, R>[] = [];
  private readonly statements: GroupCommitStatements<I, R>;
  private readonly opts: GroupCommitOptions;
  /** Statements run from the queue and the items they wrote (batching off bypasses it). */
  readonly stats = { statements: 0, items: 0, largest: 0 };
  private readonly onStatement: ((items: number) => void) | undefined;

  /** `onStatement`: told the items of every statement (a batch-size metric). */
  constructor(
    statements: GroupCommitStatements<I, R>,
    opts: GroupCommitOptions,
    onStatement?: (items: number) => void,
  ) {
    this.statements = statements;
    this.opts = opts;
    this.onStatement = onStatement;
  }

  /** The item's statement, possibly one shared with other keys' items. */
  submit(item: I): Promise<R> {
    const s = this.statements;
    if (this.opts.maxBatch === 1) {
      this.onStatement?.(1);
      return s.one(item);
    }
    try {
      s.check?.(item);
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise<R>((resolve, reject) => {
      this.waiting.push({
        item,
        key: s.key(item),
        shape: s.shape?.(item) ?? '',
        chars: s.chars?.(item) ?? 0,
        resolve,
        reject,
      });
      this.pump();
    });
  }

  private pump(): void {
    while (this.running < this.opts.concurrency && this.waiting.length > 0) {
      const batch = this.take();
      this.running++;
      void this.write(batch).finally(() => {
        this.running--;
        this.pump();
      });
    }
  }

  /**
   * The next batch: first come first, one item per key, the first item's shape, at most maxBatch
   * items and maxChars characters (the first item always goes).
   */
  private take(): Waiting<I, R>[] {
    const batch: Waiting<I, R>[] = [];
    const rest: Waiting<I, R>[] = [];
    const keys = new Set<string>();
    const first = this.waiting[0]!.shape;
    const maxChars = this.statements.maxChars ?? Number.POSITIVE_INFINITY;
    let chars = 0;
    for (let i = 0; i < this.waiting.length; i++) {
      const w = this.waiting[i]!;
      if (batch.length === this.opts.maxBatch) {
        // Full: the rest waits as it is (a long queue is not scanned again for every batch).
        for (let j = i; j < this.waiting.length; j++) rest.push(this.waiting[j]!);
        break;
      }
      const taken =
        (batch.length === 0 || chars + w.chars <= maxChars) && !keys.has(w.key) && w.shape === first;
      if (taken) chars += w.chars;
      // A key seen before (taken or held back) keeps its later items behind.
      keys.add(w.key);
      (taken ? batch : rest).push(w);
    }
    this.waiting = rest;
    return batch;
  }

  private async write(batch: Waiting<I, R>[]): Promise<void> {
    this.stats.statements++;
    this.stats.items += batch.length;
    this.stats.largest = Math.max(this.stats.largest, batch.length);
    this.onStatement?.(batch.length);
    const s = this.statements;
    if (batch.length === 1) {
      const w = batch[0]!;
      await s.one(w.item).then(w.resolve, w.reject);
      return;
    }
    try {
      const results = await s.many(batch.map((w) => w.item));
      for (const [i, w] of batch.entries()) {
        const r = results[i];
        if (!r) w.reject(new Error('group commit: the batch statement returned no outcome for an item'));
        else if ('error' in r) w.reject(r.error);
        else w.resolve(r.value);
      }
    } catch (err) {
      if (isConnectionError(err) || !isStatementError(err)) {
        for (const w of batch) w.reject(err);
        return;
      }
      // PostgreSQL refused the statement, so none of it was written: each item on its own.
      await Promise.all(batch.map((w) => s.one(w.item).then(w.resolve, w.reject)));
    }
  }
}

/** An error PostgreSQL answered with (a SQLSTATE): the statement failed and was rolled back. */
function isStatementError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code);
}
