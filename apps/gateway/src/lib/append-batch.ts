import {
  type AppendAndQueueInput,
  type AppendAndQueueResult,
  appendShape,
  appendUserMessageAndQueue,
  appendUserMessagesAndQueue,
  checkUserMessage,
  type Db,
  GroupCommit,
  groupCommitOptions,
} from '@loopline/db';

// Group commit of user messages (docs/decisions.md D39; the mechanism is db's GroupCommit). A plain
// POST …/messages is one statement and one commit; under load those statements (a socket write
// each, a WAL flush each) are most of what the gateway and PostgreSQL spend per request. So at
// most `concurrency` append statements run at once, and the messages that arrive while they are
// all busy go together in the next one (db appendUserMessagesAndQueue): one message per session
// per batch, the same wake rules, at most APPEND_BATCH_MAX_CHARS of text. Alone, a message is
// written at once, exactly as before.

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

/** Writes user messages alone when a statement slot is free, in batches when they would queue. */
export class AppendBatcher {
  private readonly group: GroupCommit<AppendAndQueueInput, AppendAndQueueResult | undefined>;

  /** `onStatement`: told the messages of every append statement (the batch-size metric). */
  constructor(
    db: Db,
    opts: Partial<AppendBatchOptions> = DEFAULT_APPEND_BATCH,
    onStatement?: (messages: number) => void,
  ) {
    this.group = new GroupCommit<AppendAndQueueInput, AppendAndQueueResult | undefined>(
      {
        key: (input) => input.sessionId,
        shape: appendShape,
        chars: batchCharsOf,
        maxChars: APPEND_BATCH_MAX_CHARS,
        check: checkUserMessage,
        one: (input) => appendUserMessageAndQueue(db, input),
        many: async (inputs) => (await appendUserMessagesAndQueue(db, inputs)).map((value) => ({ value })),
      },
      groupCommitOptions(opts, DEFAULT_APPEND_BATCH),
      onStatement,
    );
  }

  /** Statements run from the queue and the messages they wrote (a batch of one bypasses it). */
  get stats(): { statements: number; messages: number; largest: number } {
    const { statements, items, largest } = this.group.stats;
    return { statements, messages: items, largest };
  }

  /** appendUserMessageAndQueue, possibly in one statement with other sessions' messages. */
  append(input: AppendAndQueueInput): Promise<AppendAndQueueResult | undefined> {
    return this.group.submit(input);
  }
}
