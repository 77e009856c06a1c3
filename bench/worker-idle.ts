import path from 'node:path';
import { freshDatabase, namespace, purgeNamespace, rssOf, sleep } from './lib/infra.ts';
import { ROOT_DIR, spawnNode, stopProcess } from './lib/proc.ts';
import { WORKER_NODE_ARGS, workerEnv } from './lib/worker-proc.ts';

// The idle worker's RSS under a few variants, started in turn (A/B in the same window), each
// variant `rounds` times: `node bench/worker-idle.ts [rounds=3]`. A variant is an environment
// for the worker process (e.g. a node compile cache); the worker is started as the figures start
// it (lib/worker-proc.ts), left idle until its RSS holds still, then read and stopped.
// BENCH_IDLE_VARIANTS='name:K=V,K=V;name2:…' replaces the default variants; ROOT=<checkout> in a
// variant starts that checkout's worker instead (e.g. a worktree of main, for before/after).

const rounds = Number(process.argv[2] ?? 3);
const spec = process.env.BENCH_IDLE_VARIANTS ?? 'as set:';
const variants = spec.split(';').map((v) => {
  const [name, kvs = ''] = v.split(/:(.*)/s);
  const env = Object.fromEntries(
    kvs
      .split(',')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
  return { name: name!, env };
});

const db = await freshDatabase('idle');
const ns = namespace('idle');
const results = new Map<string, number[]>(variants.map((v) => [v.name, []]));
try {
  for (let r = 0; r < rounds; r++) {
    for (const v of variants) {
      const { ROOT = ROOT_DIR, ...env } = v.env;
      const script = path.relative(ROOT_DIR, path.join(ROOT, 'apps/worker/src/main.ts'));
      const child = spawnNode(
        script,
        workerEnv({ databaseUrl: db.url, namespace: ns, mockUrl: 'http://127.0.0.1:9/v1', env }),
        { log: 'worker-idle', nodeArgs: WORKER_NODE_ARGS },
      );
      const pid = child.pid ?? -1;
      // Idle once the RSS moved less than 1 MiB over a second (at least 4 s after the start).
      await sleep(4_000);
      let last = rssOf(pid)?.rss ?? 0;
      for (let i = 0; i < 20; i++) {
        await sleep(1_000);
        const now = rssOf(pid)?.rss ?? 0;
        if (Math.abs(now - last) < 1) break;
        last = now;
      }
      results.get(v.name)!.push(rssOf(pid)?.rss ?? Number.NaN);
      await stopProcess(child, 5_000);
    }
  }
} finally {
  await purgeNamespace(ns);
  await db.drop();
}
for (const [name, rss] of results)
  process.stdout.write(`${name.padEnd(24)} idle RSS ${rss.map((x) => x.toFixed(0)).join(' / ')} MiB\n`);
process.exit(0);
