import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { Queue } from 'bullmq';
import type { FastifyPluginAsync } from 'fastify';
import type { AuthGuard } from '../lib/auth-guard.ts';
import { operatorBrowserAuth } from './auth.ts';
import { toProblem } from './errors.ts';

// Bull Board over every Loopline queue, behind the operator token. Register with the prefix
// given as basePath (e.g. /admin/queues).

export interface BullBoardOptions {
  queues: Queue[];
  operatorToken: string;
  basePath: string;
  /** Lifetime of the operator session cookie `?token=` sets. */
  sessionMs?: number | undefined;
  /** The app's guard against guessing the operator token. */
  guard: AuthGuard;
}

/** Serves Bull Board for the given queues under its base path. */
export const bullBoardPlugin: FastifyPluginAsync<BullBoardOptions> = async (app, opts) => {
  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(opts.basePath);
  createBullBoard({ queues: opts.queues.map((q) => new BullMQAdapter(q)), serverAdapter });
  // Same problem body as the rest of the API (Bull Board's own handler has its own shape).
  serverAdapter.setErrorHandler((err) => {
    const p = toProblem(err);
    return { status: p.status as 500, body: { error: { code: p.code, message: p.message } } };
  });
  app.addHook(
    'onRequest',
    operatorBrowserAuth(opts.operatorToken, { sessionMs: opts.sessionMs, guard: opts.guard }),
  );
  await app.register(serverAdapter.registerPlugin());
};
