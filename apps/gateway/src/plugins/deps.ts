import type { Tokenizer } from '@loopline/core';
import { createTokenizer } from '@loopline/llm';
import type { FastifyInstance } from 'fastify';
import type { GatewayDeps } from '../deps.ts';
import { AppendBatcher } from '../lib/append-batch.ts';
import type { AuthGuard } from '../lib/auth-guard.ts';
import type { GatewayMetrics } from '../metrics.ts';
import { operatorGuard } from './auth.ts';

// The `deps` decorator, and with it `AppDeps` and the Fastify type augmentation (Fastify's
// convention: the type lives beside the plugin that decorates). Routes and lib/ take the type from
// here, not from app.ts, which imports every route.

/** deps with the tokenizer resolved (o200k_base tiktoken unless one was injected) and the metrics. */
export type AppDeps = GatewayDeps & {
  tokenizer: Tokenizer;
  metrics: GatewayMetrics;
  appends: AppendBatcher;
  /** Wrong operator tokens per client address, counted across every operator route (plugins/auth.ts). */
  operatorGuard: AuthGuard;
};

declare module 'fastify' {
  interface FastifyInstance {
    deps: AppDeps;
  }
}

/** Decorates the root instance with `deps`, read by every route as `app.deps`. */
export function decorateDeps(app: FastifyInstance, deps: GatewayDeps, metrics: GatewayMetrics): void {
  const appends = new AppendBatcher(deps.db, deps.appendBatch ?? {}, (n) => metrics.appendBatch.observe(n));
  app.decorate('deps', {
    ...deps,
    tokenizer: deps.tokenizer ?? createTokenizer('o200k_base'),
    metrics,
    appends,
    operatorGuard: operatorGuard(),
  });
}
