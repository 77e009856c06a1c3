import { describe, expect, it } from 'vitest';
import { chaosConfig, runChaos } from '../support/chaos.ts';

// The fault run (docs/durability.md): at least 50 sessions (tool calls, streams and, when the worker has its
// compaction and prune processors, small context windows) through three real worker processes
// while workers are SIGKILLed mid-tool / mid-stream / mid-compaction / mid-prune and replaced,
// frozen past their lock TTL, and their PostgreSQL connections terminated; the mock model
// answers with 429s, 500s, cut streams, malformed tool arguments, unknown tools and context-length
// errors; the gateway gets duplicate and concurrent POSTs and malformed and oversized bodies.
// Then every invariant is checked in PostgreSQL, in the tool server's log and in the model view.
//
// SOAK_MINUTES=N runs the same harness for N minutes (new sessions keep starting); FAULT_SEED
// replays a run; FAULT_SESSIONS, FAULT_WORKERS, FAULT_CONCURRENCY size it (see scripts/soak.sh).

const cfg = chaosConfig({ log: (line) => console.log(line) });

describe('fault injection', () => {
  it(
    `${cfg.sessions}+ sessions through real workers under process, database, model and gateway faults keep every invariant`,
    async () => {
      const result = await runChaos(cfg);
      console.log(`\nfault run summary (worker logs: ${result.logDir})\n${result.table}`);
      for (const v of result.violations.slice(0, 40))
        console.log(`  ✗ [${v.invariant}] ${v.sessionId ?? '-'}: ${v.message}`);
      expect(result.violations).toEqual([]);
      expect(result.report.stats.sessions).toBeGreaterThanOrEqual(cfg.sessions);
    },
    // A clean CI run takes one to two minutes; a soak its SOAK_MINUTES plus the checks of every session.
    cfg.durationMs > 0 ? cfg.durationMs * 1.5 + 900_000 : 480_000,
  );
});
