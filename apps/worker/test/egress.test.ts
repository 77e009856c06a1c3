import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DENY_PRIVATE, EgressRefusedError } from '@loopline/egress';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ATTACHMENT_MAX_BYTES,
  ATTACHMENT_TIMEOUT_MS,
  closeEgress,
  egressOf,
  WEBHOOK_MAX_BYTES,
  workerEgress,
} from '../src/egress.ts';

// The worker's egress gates against a real local HTTP server: one gate per purpose with its own
// policy (the default refuses private addresses), the operator's caps, and the shared default
// for deps that bring none.

let server: Server;
let url: string;
let hits = 0;

beforeAll(async () => {
  server = createServer((_req, res) => {
    hits++;
    res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(100));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('workerEgress', () => {
  it('defaults: every purpose refuses private addresses, with the documented caps', async () => {
    const egress = workerEgress();
    try {
      expect(egress).toMatchObject({
        webhookMaxBytes: WEBHOOK_MAX_BYTES,
        attachmentMaxBytes: ATTACHMENT_MAX_BYTES,
        attachmentTimeoutMs: ATTACHMENT_TIMEOUT_MS,
      });
      const before = hits;
      for (const purpose of ['webhook', 'attachment', 'model'] as const) {
        expect(egress.gates[purpose].purpose).toBe(purpose);
        expect(egress.gates[purpose].policy).toEqual(DENY_PRIVATE);
        await expect(
          egress.gates[purpose].request(url, { method: 'GET' }, { maxBytes: 1000, timeoutMs: 5000 }),
        ).rejects.toBeInstanceOf(EgressRefusedError);
      }
      expect(hits).toBe(before);
    } finally {
      await closeEgress(egress);
    }
  });

  it('a purpose allowed to reach the host does; the others stay closed; caps are enforced', async () => {
    const egress = workerEgress(
      { webhook: { allowPrivate: false, allowHosts: ['127.0.0.1'] } },
      { webhookMaxBytes: 64, attachmentMaxBytes: 10, attachmentTimeoutMs: 500 },
    );
    try {
      expect(egress).toMatchObject({ webhookMaxBytes: 64, attachmentMaxBytes: 10, attachmentTimeoutMs: 500 });
      const res = await egress.gates.webhook.request(
        url,
        { method: 'GET' },
        { maxBytes: 1000, timeoutMs: 5000 },
      );
      expect(res.status).toBe(200);
      expect(res.body.toString()).toBe('x'.repeat(100));
      await expect(
        egress.gates.webhook.request(url, { method: 'GET' }, { maxBytes: 10, timeoutMs: 5000 }),
      ).rejects.toMatchObject({ reason: 'too-large' });
      await expect(
        egress.gates.attachment.request(url, { method: 'GET' }, { maxBytes: 1000, timeoutMs: 5000 }),
      ).rejects.toBeInstanceOf(EgressRefusedError);
    } finally {
      await closeEgress(egress);
    }
  });
});

describe('egressOf', () => {
  it("uses the deps' gates when given, else one default set per deps object", async () => {
    const own = workerEgress();
    const deps = {};
    const other = {};
    try {
      expect(egressOf({ egress: own })).toBe(own);
      const made = egressOf(deps);
      expect(egressOf(deps)).toBe(made);
      expect(egressOf(other)).not.toBe(made);
      expect(made.gates.model.policy).toEqual(DENY_PRIVATE);
    } finally {
      await closeEgress(own);
      await closeEgress(egressOf(deps));
      await closeEgress(egressOf(other));
    }
  });
});
