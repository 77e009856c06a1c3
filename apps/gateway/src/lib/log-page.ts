import type { WithParts } from '@loopline/core';
import { loadHistory } from '@loopline/db';
import type { AppDeps } from '../plugins/deps.ts';

// A page of the log (GET …/messages?view=log) bounded in bytes as well as in messages: a message
// may hold a megabyte of text or a file, so a thousand of them would be gigabytes in the gateway.
// The page is read in chunks that grow (20, 40, 80, … messages) and ends, with hasMore, at the
// message that would take it past LOG_PAGE_MAX_BYTES of JSON; it always holds at least one.

/** The most JSON one log page holds (a single larger message is still answered, alone). */
export const LOG_PAGE_MAX_BYTES = 16 * 1024 * 1024;
const FIRST_CHUNK = 20;

export interface LogPageQuery {
  /** Only messages with a greater seq. */
  after?: number | undefined;
  /** Only messages with a smaller seq; the page is the newest of them. */
  before?: number | undefined;
  /** At most this many messages. */
  size: number;
}

/** One page of the session's log, oldest first, and whether more messages lie beyond it. */
export async function logPage(
  deps: Pick<AppDeps, 'db'>,
  tenantId: string,
  sessionId: string,
  q: LogPageQuery,
  maxBytes = LOG_PAGE_MAX_BYTES,
): Promise<{ messages: WithParts[]; hasMore: boolean }> {
  const backward = q.before !== undefined;
  const taken: WithParts[] = [];
  let bytes = 0;
  let chunk = FIRST_CHUNK;
  // The seq the next chunk continues from (exclusive), in the page's reading direction.
  let from = backward ? q.before : q.after;
  for (;;) {
    // One more than the page still needs tells whether more lie beyond it.
    const want = Math.min(chunk, q.size + 1 - taken.length);
    const got = await loadHistory(deps.db, tenantId, sessionId, {
      includeReverted: true,
      ...(backward
        ? { beforeSeq: from, last: want, ...(q.after !== undefined ? { fromSeq: q.after + 1 } : {}) }
        : {
            ...(from !== undefined ? { fromSeq: from + 1 } : {}),
            ...(q.before !== undefined ? { beforeSeq: q.before } : {}),
            first: want,
          }),
    });
    const inOrder = backward ? got.reverse() : got;
    for (const m of inOrder) {
      const size = JSON.stringify(m).length;
      if (taken.length === q.size || (taken.length > 0 && bytes + size > maxBytes)) {
        return { messages: backward ? taken.reverse() : taken, hasMore: true };
      }
      taken.push(m);
      bytes += size;
      from = m.info.seq;
    }
    if (got.length < want) return { messages: backward ? taken.reverse() : taken, hasMore: false };
    chunk *= 2;
  }
}
