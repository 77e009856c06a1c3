import type { Db } from '../client.ts';
import type { BatchItemResult } from '../tables/batch.table.ts';

// The result line of a finished batch conversation, read from the session's log once, when its
// batch item finishes (GET /v1/batches/:id/results then reads the stored row).

/**
 * What a finished conversation produced: the text of the newest answer (the last non-summary
 * assistant message with text), usage summed over every model call, and completed compactions.
 */
export async function batchItemResult(db: Db, tenantId: string, sessionId: string): Promise<BatchItemResult> {
  const messages = await db
    .selectFrom('messages')
    .select(['id', 'info'])
    .where('session_id', '=', sessionId)
    .where('tenant_id', '=', tenantId)
    .where('role', '=', 'assistant')
    .where('reverted', '=', false)
    .orderBy('seq')
    .execute();
  const usage = { input: 0, output: 0, reasoning: 0, cacheRead: 0, cacheWrite: 0, total: 0 };
  let modelCalls = 0;
  const answers: string[] = [];
  for (const { id, info } of messages) {
    if (info.role !== 'assistant') continue;
    if (info.usage) {
      modelCalls++;
      usage.input += info.usage.input;
      usage.output += info.usage.output;
      usage.reasoning += info.usage.reasoning;
      usage.cacheRead += info.usage.cache.read;
      usage.cacheWrite += info.usage.cache.write;
      usage.total += info.usage.total;
    }
    if (!info.summary) answers.push(id);
  }
  let output: string | null = null;
  for (let i = answers.length - 1; i >= 0 && output === null; i--) {
    const parts = await db
      .selectFrom('parts')
      .select('data')
      .where('message_id', '=', answers[i]!)
      .where('type', '=', 'text')
      .orderBy('seq')
      .execute();
    const text = parts.map((p) => (p.data as { text?: string }).text ?? '').join('');
    if (text.length > 0) output = text;
  }
  const compactions = await db
    .selectFrom('compactions')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('session_id', '=', sessionId)
    .where('tenant_id', '=', tenantId)
    .where('status', '=', 'completed')
    .executeTakeFirstOrThrow();
  return { output, usage, modelCalls, compactions: Number(compactions.n) };
}
