import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { p, user } from '../../../packages/core/test/build.ts';
import { pgTest as test } from '../../../packages/testkit/src/fixtures.ts';
import { makeSessionWithTenant } from '../../../packages/testkit/src/index.ts';
import { closeEgress, workerEgress } from '../src/egress.ts';
import { attachmentBytes } from '../src/step/attachments.ts';

// A model call's http(s) attachments on the real PostgreSQL and a real HTTP server: fetched once
// through the attachment egress gate and stored, then sent from storage; a refused or failed
// download is a permanent AttachmentError whose message never carries the URL's query.

let server: Server;
let base: string;
const hits = new Map<string, number>();

beforeAll(async () => {
  server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0]!;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    if (path.startsWith('/files/'))
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`bytes of ${path}`);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** Gates that let attachments reach the local test server (tests only). */
const localEgress = () => workerEgress({ attachment: { allowPrivate: false, allowHosts: ['127.0.0.1'] } });
const text = (b: Uint8Array | undefined) => Buffer.from(b ?? []).toString('utf8');

describe('attachmentBytes', () => {
  test('fetches each http(s) file once, stores it, and sends the stored bytes afterwards', async ({ pg }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    const ctx = { tenantId: tenant.id, sessionId: session.id };
    const history = [
      user([
        p.file('text/plain', `${base}/files/a.txt`),
        p.file('text/plain', `${base}/files/b.txt`),
        'look',
      ]),
      user([p.file('image/png', 'data:image/png;base64,AAAA')]),
    ];
    const [a, b] = history[0]!.parts;
    const egress = localEgress();
    try {
      const first = await attachmentBytes({ db: pg.db, egress }, ctx, history, new AbortController().signal);
      expect([...first.keys()].sort()).toEqual([a!.id, b!.id].sort());
      expect(text(first.get(a!.id))).toBe('bytes of /files/a.txt');
      // The data: URL is the model's to read; nothing is fetched or stored for it.
      expect(first.has(history[1]!.parts[0]!.id)).toBe(false);
      const again = await attachmentBytes({ db: pg.db, egress }, ctx, history, new AbortController().signal);
      expect(text(again.get(b!.id))).toBe('bytes of /files/b.txt');
      expect(hits.get('/files/a.txt')).toBe(1);
      expect(hits.get('/files/b.txt')).toBe(1);
    } finally {
      await closeEgress(egress);
    }
  });

  test('an HTTP error is a permanent AttachmentError without the query string', async ({ pg }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    const history = [user([p.file('text/plain', `${base}/gone.txt?token=sekrit`)])];
    const egress = localEgress();
    try {
      const failed = attachmentBytes(
        { db: pg.db, egress },
        { tenantId: tenant.id, sessionId: session.id },
        history,
        new AbortController().signal,
      );
      await expect(failed).rejects.toMatchObject({ name: 'AttachmentError', data: { retryable: false } });
      await expect(failed).rejects.toThrow(
        `attachment ${base}/gone.txt was not fetched: the server answered HTTP 404`,
      );
      await expect(failed).rejects.not.toThrow(/sekrit/);
    } finally {
      await closeEgress(egress);
    }
  });

  test('without a policy allowing it, a private address is refused before any request', async ({ pg }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    const history = [user([p.file('text/plain', `${base}/files/private.txt`)])];
    const refused = attachmentBytes(
      { db: pg.db },
      { tenantId: tenant.id, sessionId: session.id },
      history,
      new AbortController().signal,
    );
    await expect(refused).rejects.toMatchObject({ name: 'AttachmentError', data: { retryable: false } });
    expect(hits.get('/files/private.txt')).toBeUndefined();
    const stored = await pg.db
      .selectFrom('attachments')
      .select('part_id')
      .where('tenant_id', '=', tenant.id)
      .execute();
    expect(stored).toEqual([]);
  });
});
