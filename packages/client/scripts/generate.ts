import { writeFile } from 'node:fs/promises';
import { closeDb, createDb } from '@loopline/db';
import { buildApp } from '@loopline/gateway';
import { createQueues, createRedis, keySpace, redisConfigFromEnv } from '@loopline/queue';
import openapiTS, { astToString } from 'openapi-typescript';

// Regenerates src/openapi.ts (the API's types) from the OpenAPI document of the gateway in this
// repository: the app is built in process (no port, no database query: the document is served
// from the route schemas), its /docs/json read through inject(), and openapi-typescript renders
// it. test/openapi-drift.test.ts fails when the checked-in file differs from this output.
//
//   pnpm --filter @loopline/client generate
//
// Needs Redis reachable (REDIS_URL, default 127.0.0.1:6379): the gateway's queues connect on build.

export const TYPES_FILE = new URL('../src/openapi.ts', import.meta.url);

const HEADER =
  '// The Loopline API types, generated from the OpenAPI document by scripts/generate.ts\n' +
  '// (openapi-typescript). Do not edit: run `pnpm --filter @loopline/client generate`.\n\n';

/** The OpenAPI document of the gateway as it is now. */
export async function liveDocument(): Promise<Record<string, unknown>> {
  // The pool connects on first query, and the document needs none.
  const db = createDb(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
  const redis = createRedis(redisConfigFromEnv(process.env), { maxRetriesPerRequest: 3 });
  const keys = keySpace('loopline-openapi');
  const queues = createQueues(redis, keys);
  const app = await buildApp({ db, redis, queues, keys, operatorToken: 'openapi', logger: false });
  try {
    const res = await app.inject({ method: 'GET', url: '/docs/json' });
    if (res.statusCode !== 200) throw new Error(`GET /docs/json answered ${res.statusCode}`);
    return res.json() as Record<string, unknown>;
  } finally {
    await app.close();
    await queues.close();
    redis.disconnect();
    await closeDb(db);
  }
}

/** src/openapi.ts for a document. */
export async function renderTypes(doc: Record<string, unknown>): Promise<string> {
  // `servers` follows the request; it is not part of the types.
  const { servers: _servers, ...stable } = doc;
  const ast = await openapiTS(stable as unknown as Parameters<typeof openapiTS>[0], { exportType: false });
  return HEADER + astToString(ast);
}

if (import.meta.main) {
  const text = await renderTypes(await liveDocument());
  await writeFile(TYPES_FILE, text);
  process.stdout.write(`wrote ${TYPES_FILE.pathname}\n`);
}
