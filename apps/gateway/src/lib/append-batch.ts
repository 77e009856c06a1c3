import {
  type AppendAndQueueInput,
  type AppendAndQueueResult,
  appendShape,
  appendUserMessageAndQueue,
  appendUserMessagesAndQueue,
  checkUserMessage,
  type Db,
  isConnectionError,
} from '@loopline/db';

// Group commit of user messages (docs/decisions.md D39). A plain POST …/messages is one statement
// and one commit; under load those statements (a socket write each, a WAL flush each) are most of
// what the gateway and PostgreSQL spend per request. So at most `concurrency` append statements
// run at once; a message that arrives while they are all busy waits for the next one to finish,
// and everything that waited then goes in ONE statement (db appendUserMessagesAndQueue). There is
// no timer: alone, a message is written at once, exactly as before; batches form only when
// messages would otherwise queue for a connection.
//
// Order: first come, first written. A batch holds one message per session; a session's later
// messages wait for a later batch, behind its earlier ones. A failed batch wrote nothing (one
// statement, one transaction): when PostgreSQL refused it, each message is written again on its
// own, so one bad message fails alone; when the connection failed, nobody can tell whether it
// committed, and every message of it gets that error, as a single statement's request would.

export interface AppendBatchOptions {
  /** Append statements in flight at once (LOOPLINE_APPEND_CONCURRENCY). */
  concurrency: number;
  /** Messages per statement at most (LOOPLINE_APPEND_BATCH_MAX); 1 turns batching off. */
  maxBatch: number;
}

export const DEFAULT_APPEND_BATCH: AppendBatchOptions = { concurrency: 4, maxBatch: 64 };

/**
 * Characters of text one statement carries at most (a request body may hold 2 MiB): a batch of
 * large messages stays a statement of bounded size, and a message above it goes alone.
 */
export const APPEND_BATCH_MAX_CHARS = 1024 * 1024;

/** About how many characters a message adds to a batch statement (its texts, a little per part). */
export function batchCharsOf(input: AppendAndQueueInput): number {
  let chars = 256 + (input.system?.length ?? 0);
  for (const part of input.parts) {
    chars += 256;
    if (part.type === 'text') chars += part.text.length;
    else if (part.type === 'file') chars += part.url.length;
  }
  return chars;
}

interface Waiting {
  input: AppendAndQueueInput;
  /** The wake rules (one statement text per shape), and batchCharsOf, computed once. */
  shape: string;
  chars: number;
  resolve(result: AppendAndQueueResult | undefined): void;
  reject(err: unknown): void;
}

/** Writes user messages alone when a statement slot is free, in batches when they would queue. */
export class AppendBatcher {
  private running = 0;
  private waiting: Waiting[] = [];
  private readonly db: Db;
  private readonly opts: AppendBatchOptions;
  /** Statements run from the queue and the messages they wrote (a batch of one bypasses it). */
  readonly stats = { statements: 0, messages: 0, largest: 0 };

  private readonly onStatement: ((messages: number) => void) | undefined;

  /** `onStatement`: told the messages of every append statement (the batch-size metric). */
  constructor(
    db: Db,
    opts: Partial<AppendBatchOptions> = DEFAULT_APPEND_BATCH,
    onStatement?: (messages: number) => void,
  ) {
    this.db = db;
    this.onStatement = onStatement;
    // An option left undefined by an embedder (buildApp takes them as optional) is the default,
    // never NaN: a NaN concurrency would leave every message waiting forever.
    const count = (n: number | undefined, fallback: number) =>
      n !== undefined && Number.isFinite(n) ? Math.max(1, Math.floor(n)) : fallback;
    this.opts = {
      concurrency: count(opts.concurrency, DEFAULT_APPEND_BATCH.concurrency),
      maxBatch: count(opts.maxBatch, DEFAULT_APPEND_BATCH.maxBatch),
    };
  }

  /** appendUserMessageAndQueue, possibly in one statement with other sessions' messages. */
  append(input: AppendAndQueueInput): Promise<AppendAndQueueResult | undefined> {
    if (this.opts.maxBatch === 1) {
      this.onStatement?.(1);
      return appendUserMessageAndQueue(this.db, input);
    }
    // A message no statement may write fails here, alone, before it can join a batch.
    try {
      checkUserMessage(input);
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise((resolve, reject) => {
      this.waiting.push({ input, shape: appendShape(input), chars: batchCharsOf(input), resolve, reject });
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
   * The next batch: first come first, one message per session, the same wake rules, at most
   * maxBatch messages and APPEND_BATCH_MAX_CHARS of text (the first message always goes).
   */
  private take(): Waiting[] {
    const batch: Waiting[] = [];
    const rest: Waiting[] = [];
    const sessions = new Set<string>();
    const first = this.waiting[0]!.shape;
    let chars = 0;
    for (let i = 0; i < this.waiting.length; i++) {
      const w = this.waiting[i]!;
      if (batch.length === this.opts.maxBatch) {
        // Full: the rest waits as it is (a long queue is not scanned again for every batch).
        for (let j = i; j < this.waiting.length; j++) rest.push(this.waiting[j]!);
        break;
      }
      const taken =
        (batch.length === 0 || chars + w.chars <= APPEND_BATCH_MAX_CHARS) &&
        !sessions.has(w.input.sessionId) &&
        w.shape === first;
      if (taken) chars += w.chars;
      // A session seen before (taken or held back) keeps its later messages behind.
      sessions.add(w.input.sessionId);
      (taken ? batch : rest).push(w);
    }
    this.waiting = rest;
    return batch;
  }

  private async write(batch: Waiting[]): Promise<void> {
    this.stats.statements++;
    this.stats.messages += batch.length;
    this.stats.largest = Math.max(this.stats.largest, batch.length);
    this.onStatement?.(batch.length);
    try {
      const results = await appendUserMessagesAndQueue(
        this.db,
        batch.map((w) => w.input),
      );
      for (const [i, w] of batch.entries()) w.resolve(results[i]);
    } catch (err) {
      if (batch.length === 1 || isConnectionError(err) || !isStatementError(err)) {
        for (const w of batch) w.reject(err);
        return;
      }
      // PostgreSQL refused the statement, so none of it was written: each message on its own.
      await Promise.all(
        batch.map((w) => appendUserMessageAndQueue(this.db, w.input).then(w.resolve, w.reject)),
      );
    }
  }
}

/** An error PostgreSQL answered with (a SQLSTATE): the statement failed and was rolled back. */
function isStatementError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code);
}
