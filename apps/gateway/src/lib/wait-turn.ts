import type { WithParts } from '@loopline/core';
import { getSession, loadHistory } from '@loopline/db';
import type { AppDeps } from '../plugins/deps.ts';

// `Prefer: wait=N` on POST …/messages: after the append, poll the session row (a primary-key
// read) until the turn that answers the message is over — the session idle or failed with a
// message after it — or N seconds pass. A session waiting on a client tool has not finished its
// turn. Backs off from 50 ms to 500 ms so a long wait costs a few reads a second.

export const MAX_WAIT_S = 120;

/** The seconds of `Prefer: wait=N` (clamped to MAX_WAIT_S), or undefined without it. */
export function preferWait(header: string | undefined): number | undefined {
  const match = header ? /wait\s*=\s*(\d+)/i.exec(header) : null;
  return match ? Math.min(Number(match[1]), MAX_WAIT_S) : undefined;
}

export interface FinishedTurn {
  status: 'idle' | 'error';
  messages: WithParts[];
  text: string | null;
}

/** Polls until the turn answering a message is over or the wait runs out (`Prefer: wait=N`). */
export async function waitForTurn(
  deps: AppDeps,
  tenantId: string,
  sessionId: string,
  messageSeq: number,
  seconds: number,
  signal?: AbortSignal,
): Promise<FinishedTurn | undefined> {
  const deadline = Date.now() + seconds * 1000;
  let pause = 50;
  for (;;) {
    const session = await getSession(deps.db, tenantId, sessionId);
    if (!session) return undefined;
    const over = session.status === 'idle' || session.status === 'error';
    if (over && (session.lastSeq > messageSeq || session.status === 'error')) {
      const messages = (await loadHistory(deps.db, tenantId, sessionId, { fromSeq: messageSeq + 1 })).filter(
        (m) => m.info.role === 'assistant',
      );
      let text: string | null = null;
      for (const m of messages) {
        if (m.info.role === 'assistant' && m.info.summary) continue;
        const t = m.parts.flatMap((p) => (p.type === 'text' && !p.ignored ? [p.text] : [])).join('');
        if (t.length > 0) text = t;
      }
      return { status: session.status as 'idle' | 'error', messages, text };
    }
    const left = deadline - Date.now();
    if (left <= 0 || signal?.aborted) return undefined;
    // A closed connection ends the pause at once (its place among the waits is given back then).
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, Math.min(pause, left));
      signal?.addEventListener('abort', done, { once: true });
    });
    pause = Math.min(pause * 2, 500);
  }
}
