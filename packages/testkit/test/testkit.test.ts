import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import {
  createTestDatabase,
  ensureTemplate,
  makeSessionWithTenant,
  migrationsHash,
  testRedisPrefix,
} from '../src/index.ts';

// The fixtures themselves: migrated, isolated, disposable databases; unique Redis prefixes.

describe('createTestDatabase', () => {
  it('clones a migrated template named after the migrations', async () => {
    expect(await ensureTemplate()).toBe(`loopline_tpl_${await migrationsHash()}`);
    const [a, b] = await Promise.all([createTestDatabase('iso a'), createTestDatabase('iso b')]);
    try {
      expect(a.name).toMatch(/^loopline_t_iso_a_[0-9a-f]{8}$/);
      const { session } = await makeSessionWithTenant(a.db);
      expect(await b.db.selectFrom('sessions').select('id').execute()).toEqual([]);
      expect(await a.db.selectFrom('sessions').select('id').execute()).toEqual([{ id: session.id }]);
    } finally {
      await a.drop();
      await b.drop();
      await b.drop(); // idempotent
    }
    const probe = await createTestDatabase('probe');
    try {
      const { rows } = await sql<{ n: number }>`
        select count(*)::int as n from pg_database where datname in (${a.name}, ${b.name})`.execute(probe.db);
      expect(rows[0]?.n).toBe(0);
    } finally {
      await probe.drop();
    }
  });
});

describe('testRedisPrefix', () => {
  it('is unique and free of ":"', () => {
    const prefixes = new Set(Array.from({ length: 100 }, () => testRedisPrefix('Step Jobs: retry')));
    expect(prefixes.size).toBe(100);
    for (const p of prefixes) expect(p).toMatch(/^t-step-jobs-retry-[0-9a-f]{8}$/);
  });
});
