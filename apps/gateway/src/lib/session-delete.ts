import { deleteSessionTree, getSession } from '@loopline/db';
import type { RedisClient } from '@loopline/queue';
import type { FastifyBaseLogger } from 'fastify';
import type { AppDeps } from '../plugins/deps.ts';
import { abortSession } from './abort.ts';
import { HttpError, notFound } from './http-error.ts';

// DELETE /v1/sessions/:id (data deletion). PostgreSQL first, in one transaction (repo
// session-delete.ts): refused while the session or a child works, or a runner still holds its
// lock. With force, the turn is aborted first and the delete waits for it to stop. Then Redis:
// the event streams, and every job still queued for these sessions (their ids carry the session
// id; an active job cannot be removed, and finds no session when it next reads one).

const FORCE_WAIT_MS = 10_000;

async function heldLocks(deps: AppDeps, ids: string[]): Promise<string[]> {
  const held: string[] = [];
  for (const id of ids) if ((await deps.redis.exists(deps.keys.lock(id))) === 1) held.push(id);
  return held;
}

/** Every master node: SCAN is per node on a Redis Cluster. */
function scanNodes(redis: RedisClient): RedisClient[] {
  return 'nodes' in redis && typeof redis.nodes === 'function' ? redis.nodes('master') : [redis];
}

async function removeJobs(deps: AppDeps, log: FastifyBaseLogger, sessionId: string): Promise<number> {
  const prefix = deps.keys.queuePrefix;
  const queues = new Map(deps.queues.all().map((q) => [q.name, q]));
  let removed = 0;
  for (const node of scanNodes(deps.redis)) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', `${prefix}:*-${sessionId}*`, 'COUNT', 1000);
      cursor = next;
      for (const key of keys) {
        // <prefix>:<queue>:<job id>; job ids never contain ':', so longer keys are a job's sub-keys.
        const rest = key.slice(prefix.length + 1).split(':');
        if (rest.length !== 2) continue;
        const queue = queues.get(rest[0]!);
        if (!queue) continue;
        try {
          removed += (await queue.remove(rest[1]!)) ? 1 : 0;
        } catch (err) {
          log.warn({ err, jobId: rest[1], queue: queue.name }, 'job of a deleted session not removed');
        }
      }
    } while (cursor !== '0');
  }
  return removed;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Deletes a session and its children: PostgreSQL first, then their Redis streams and jobs. */
export async function deleteSession(
  deps: AppDeps,
  log: FastifyBaseLogger,
  tenantId: string,
  sessionId: string,
  force: boolean,
): Promise<string[]> {
  const attempt = () => deleteSessionTree(deps.db, tenantId, sessionId, (ids) => heldLocks(deps, ids));
  let outcome = await attempt();
  if (!outcome.deleted && outcome.reason === 'busy' && force) {
    await abortSession(deps, log, tenantId, sessionId);
    const deadline = Date.now() + FORCE_WAIT_MS;
    let pause = 50;
    while (!outcome.deleted && outcome.reason === 'busy' && Date.now() < deadline) {
      await sleep(pause);
      pause = Math.min(pause * 2, 500);
      // A child started after the abort, or a session still waiting, gets its own abort.
      for (const b of outcome.busy) {
        const s = await getSession(deps.db, tenantId, b.id);
        if (s && s.status !== 'idle' && s.status !== 'error' && s.abortRequestedSeq === null)
          await abortSession(deps, log, tenantId, b.id);
      }
      outcome = await attempt();
    }
  }
  if (!outcome.deleted) {
    if (outcome.reason === 'not_found') throw notFound('session', sessionId);
    if (outcome.reason === 'batch_running')
      throw new HttpError(
        'batch_running',
        `The session belongs to batch ${outcome.batchId}, which is still running: cancel it first`,
        { batchId: outcome.batchId },
      );
    throw new HttpError(
      'session_busy',
      force
        ? 'The session is still stopping after the abort; retry the delete'
        : 'The session is working: abort it first, or delete with ?force=true',
      { busy: outcome.busy },
    );
  }
  for (const id of outcome.sessionIds) {
    await deps.redis.del(deps.keys.events(id), deps.keys.eventsBytes(id), deps.keys.compactJob(id));
    const jobs = await removeJobs(deps, log, id);
    log.info({ tenantId, sessionId: id, jobs }, 'session deleted');
  }
  return outcome.sessionIds;
}
