import { saveToolOutput } from '@loopline/db';
import { describe, expect } from 'vitest';
import { pgTest as test } from '../../../packages/testkit/src/fixtures.ts';
import { makeSessionWithTenant } from '../../../packages/testkit/src/index.ts';
import { readOutput } from '../src/tools/read-output.ts';

// The built-in read_output tool on the real PostgreSQL: pages and searches a stored full output,
// only within its own tenant and session, and an expired or unknown id reads as absent.

const content = Array.from({ length: 30 }, (_, i) => `line ${i + 1}${i === 20 ? ' NEEDLE' : ''}`).join('\n');

describe('read_output', () => {
  test('pages through a stored output, searches it, and names an unknown id', async ({ pg }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    await pg.db.transaction().execute((trx) =>
      saveToolOutput(trx, {
        id: 'out_1',
        tenantId: tenant.id,
        sessionId: session.id,
        partId: 'prt_1',
        callId: 'call_1',
        content,
        retentionDays: 7,
      }),
    );
    const deps = { db: pg.db };
    const ctx = { tenantId: tenant.id, sessionId: session.id };

    const page = await readOutput(deps, ctx, { outputId: 'out_1', offset: 10, limit: 5 });
    expect(page.title).toBe('read_output out_1');
    expect(page.output).toContain('line 11');
    expect(page.output).toContain('line 15');
    expect(page.output).not.toContain('line 16');
    expect(page.output).toContain('Use offset=15 to read more.');

    const found = await readOutput(deps, ctx, { outputId: 'out_1', pattern: 'NEEDLE' });
    expect(found.output).toContain('line 21 NEEDLE');
    expect(found.output).not.toContain('line 20\n');

    // Arguments of the wrong type are ignored (the whole output from the start), not thrown on.
    const loose = await readOutput(deps, ctx, { outputId: 'out_1', offset: 'ten', limit: null });
    expect(loose.output).toContain('line 1');
    expect(loose.output).toContain('(End of output: 30 lines.)');

    const missing = await readOutput(deps, ctx, { outputId: 'out_nope' });
    expect(missing.output).toBe('No stored output with id "out_nope" (it may have expired).');
    expect((await readOutput(deps, ctx, {})).output).toContain('No stored output with id ""');
  });

  test('a pattern that backtracks exponentially runs in linear time in the worker', async ({ pg }) => {
    // A tenant's endpoint (or a model asked to) can send any pattern: on a backtracking engine
    // this one over lines of `aaa…` blocks the event loop for far longer than the test's timeout.
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    await pg.db.transaction().execute((trx) =>
      saveToolOutput(trx, {
        id: 'out_redos',
        tenantId: tenant.id,
        sessionId: session.id,
        partId: 'prt_redos',
        callId: 'call_redos',
        content: Array.from({ length: 3 }, () => 'a'.repeat(20_000)).join('\n'),
        retentionDays: 7,
      }),
    );
    const ctx = { tenantId: tenant.id, sessionId: session.id };
    const out = await readOutput({ db: pg.db }, ctx, { outputId: 'out_redos', pattern: '(a|a)*b' });
    expect(out.output).toBe('(No lines match "(a|a)*b" after line 0.)');
    const hit = await readOutput({ db: pg.db }, ctx, { outputId: 'out_redos', pattern: '^(a|aa)+$' });
    expect(hit.output).toContain('(3 matching lines.)');
  });

  test("another session's output, and an expired one, read as absent", async ({ pg }) => {
    const a = await makeSessionWithTenant(pg.db);
    const b = await makeSessionWithTenant(pg.db);
    await pg.db.transaction().execute((trx) =>
      saveToolOutput(trx, {
        id: 'out_a',
        tenantId: a.tenant.id,
        sessionId: a.session.id,
        partId: 'prt_a',
        callId: 'call_a',
        content,
        retentionDays: 7,
      }),
    );
    const deps = { db: pg.db };
    const other = await readOutput(
      deps,
      { tenantId: b.tenant.id, sessionId: b.session.id },
      { outputId: 'out_a' },
    );
    expect(other.output).toContain('No stored output');
    const own = { tenantId: a.tenant.id, sessionId: a.session.id };
    expect((await readOutput(deps, own, { outputId: 'out_a' })).output).toContain('line 30');
    await pg.db
      .updateTable('tool_outputs')
      .set({ expires_at: new Date('2000-01-01T00:00:00Z') })
      .where('id', '=', 'out_a')
      .execute();
    expect((await readOutput(deps, own, { outputId: 'out_a' })).output).toContain('No stored output');
  });
});
