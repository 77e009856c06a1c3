import { describe, expect } from 'vitest';
import { pgTest as test } from '../../testkit/src/fixtures.ts';
import { makeSessionWithTenant } from '../../testkit/src/index.ts';
import { deleteWebhookSubscription, getWebhookSubscription, putWebhookSubscription } from '../src/index.ts';

// Saving a subscription: a new secret upserts; no new secret only updates an existing row, so a
// subscription deleted between the route's read and its write is never recreated without a secret.

const cfg = { url: 'https://example.test/h', eventTypes: ['session.idle'], enabled: true };

describe('webhook subscriptions', () => {
  test('created, updated, rotated; an update without a secret of a deleted one recreates nothing', async ({
    pg,
  }) => {
    const { tenant } = await makeSessionWithTenant(pg.db);
    expect((await putWebhookSubscription(pg.db, tenant.id, 'a', cfg, 'sealed-1'))?.created).toBe(true);
    const updated = await putWebhookSubscription(
      pg.db,
      tenant.id,
      'a',
      { ...cfg, enabled: false },
      undefined,
    );
    expect(updated).toMatchObject({ created: false, subscription: { enabled: false } });
    expect((await getWebhookSubscription(pg.db, tenant.id, 'a'))?.sealedSecret).toBe('sealed-1');
    expect((await putWebhookSubscription(pg.db, tenant.id, 'a', cfg, 'sealed-2'))?.created).toBe(false);
    expect((await getWebhookSubscription(pg.db, tenant.id, 'a'))?.sealedSecret).toBe('sealed-2');

    await deleteWebhookSubscription(pg.db, tenant.id, 'a');
    expect(await putWebhookSubscription(pg.db, tenant.id, 'a', cfg, undefined)).toBeUndefined();
    expect(await getWebhookSubscription(pg.db, tenant.id, 'a')).toBeUndefined();
  });
});
