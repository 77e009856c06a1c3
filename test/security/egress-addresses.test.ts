import {
  checkUrl,
  classifyAddress,
  createEgressGate,
  DENY_PRIVATE,
  type EgressGate,
  EgressRefusedError,
  hostList,
} from '@loopline/egress';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SecretServer, startSecretServer } from './servers.ts';

// Every textual form of an internal address is refused by the egress gate, before any
// connection, and a real "secret" server on loopback is never reached. The old check compared
// strings and let IPv4-mapped IPv6 (`[::ffff:7f00:1]`, Node's normal form) through.

let secret: SecretServer;
let gate: EgressGate;

beforeAll(async () => {
  secret = await startSecretServer();
  gate = createEgressGate({ purpose: 'webhook', policy: DENY_PRIVATE });
});
afterAll(async () => {
  await gate?.close();
  await secret?.close();
});

const limits = { maxBytes: 1024 * 1024, timeoutMs: 5_000 };

/** Hosts that all mean this machine (or another internal address) in some textual form. */
const LOOPBACK_FORMS = [
  '127.0.0.1',
  '127.1',
  '2130706433', // decimal
  '0x7f000001', // hex
  '0x7f.0.0.1',
  '0177.0.0.1', // octal
  '017700000001',
  '[::1]',
  '[::ffff:127.0.0.1]', // IPv4-mapped
  '[::ffff:7f00:1]',
  '[0:0:0:0:0:ffff:7f00:1]',
  '[::127.0.0.1]', // IPv4-compatible
  '[64:ff9b::7f00:1]', // NAT64
  '[2002:7f00:1::]', // 6to4 of 127.0.0.1
  'localhost',
  'api.localhost',
];

describe('egress gate: textual address forms', () => {
  it.each(LOOPBACK_FORMS)('refuses http://%s and never reaches the secret server', async (host) => {
    const url = `http://${host}:${secret.port}/internal`;
    const err = await gate.request(url, { method: 'POST', body: '{}' }, limits).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EgressRefusedError);
    expect((err as EgressRefusedError).reason).toBe('private-address');
    expect(secret.hits).toEqual([]);
    expect(secret.connections).toBe(0);
  });

  it('refuses the SDK-facing fetch the same way', async () => {
    for (const host of ['[::ffff:7f00:1]', '127.0.0.1', '2130706433']) {
      await expect(gate.fetch(`http://${host}:${secret.port}/v1/chat/completions`)).rejects.toThrow(
        /private or loopback/,
      );
    }
    expect(secret.hits).toEqual([]);
  });

  it('classifies every range with ipaddr.js, embedded IPv4 included', () => {
    const table: Record<string, string> = {
      '10.1.2.3': 'private',
      '172.16.0.1': 'private',
      '192.168.1.1': 'private',
      '100.64.0.1': 'private', // CGNAT
      '0.0.0.0': 'private',
      '0.1.2.3': 'private',
      '224.0.0.1': 'private', // multicast
      '255.255.255.255': 'private',
      'fc00::1': 'private', // unique-local
      'fd12:3456::1': 'private',
      'ff02::1': 'private',
      '::': 'private',
      '::ffff:10.0.0.1': 'private',
      '64:ff9b::a00:1': 'private',
      '2002:c0a8:101::': 'private', // 6to4 of 192.168.1.1
      '169.254.169.254': 'metadata',
      'fd00:ec2::254': 'metadata',
      '::ffff:169.254.169.254': 'metadata',
      // Link-local as a whole and the other clouds' metadata and host agents.
      '169.254.1.1': 'metadata',
      '169.254.0.23': 'metadata', // Tencent Cloud
      '169.254.42.42': 'metadata', // Scaleway
      '169.254.170.23': 'metadata', // EKS Pod Identity
      'fe80::1': 'metadata',
      'fd00:ec2::23': 'metadata', // EKS Pod Identity over IPv6
      '168.63.129.16': 'metadata', // Azure WireServer (global unicast)
      '::ffff:168.63.129.16': 'metadata',
      '192.0.0.192': 'metadata', // Oracle Cloud Classic
      '100.100.100.200': 'metadata', // Alibaba Cloud
      '168.63.129.17': 'public',
      '192.0.0.193': 'private',
      'fd00:ec3::1': 'private',
      '8.8.8.8': 'public',
      '2606:4700:4700::1111': 'public',
      '64:ff9b::808:808': 'public',
      // RFC 8215 local-use NAT64 (/48): its IPv4 address may sit in other bits; private as a whole.
      '64:ff9b:1:a00:1::808:808': 'private',
      '64:ff9b:1::808:808': 'private',
      'not-an-ip': 'invalid',
    };
    for (const [ip, klass] of Object.entries(table)) expect(classifyAddress(ip), ip).toBe(klass);
  });

  it('never opens cloud metadata, even with every private address allowed', async () => {
    // Every private address allowed, and two metadata hosts named in the allow-list too.
    const open = createEgressGate({
      purpose: 'webhook',
      policy: { allowPrivate: true, allowHosts: ['168.63.129.16:80', '169.254.0.23:80'] },
    });
    try {
      for (const url of [
        'http://169.254.169.254/latest/meta-data/',
        'http://[fd00:ec2::254]/',
        'http://169.254.0.23/latest/meta-data/cam/security-credentials/role',
        'http://169.254.42.42/conf',
        'http://168.63.129.16/?comp=versions',
        'http://[fe80::1]/',
      ]) {
        const err = await open.request(url, {}, limits).catch((e: unknown) => e);
        expect((err as EgressRefusedError).reason).toBe('metadata-address');
      }
    } finally {
      await open.close();
    }
  });

  it('refuses schemes other than http(s) and credentials in the URL', () => {
    for (const url of ['ftp://example.com/x', 'file:///etc/passwd', 'gopher://x/', 'http://u:p@example.com/'])
      expect(() => checkUrl(url, 'webhook', DENY_PRIVATE)).toThrow(EgressRefusedError);
  });
});

describe('egress gate: allow-lists are per purpose', () => {
  it('a host allowed for webhooks is reached by the webhook gate only', async () => {
    const policy = { allowPrivate: false, allowHosts: ['127.0.0.1'] };
    const webhooks = createEgressGate({ purpose: 'webhook', policy });
    const attachments = createEgressGate({ purpose: 'attachment', policy: DENY_PRIVATE });
    try {
      const ok = await webhooks.request(`${secret.url}/allowed`, { method: 'POST', body: '{}' }, limits);
      expect(ok.status).toBe(200);
      expect(secret.hits).toHaveLength(1);
      const err = await attachments.request(`${secret.url}/x`, {}, limits).catch((e: unknown) => e);
      expect((err as EgressRefusedError).reason).toBe('private-address');
      expect((err as Error).message).toMatch(/LOOPLINE_ATTACHMENT_ALLOW_HOSTS/);
      expect(secret.hits).toHaveLength(1);
    } finally {
      secret.hits.length = 0;
      secret.connections = 0;
      await webhooks.close();
      await attachments.close();
    }
  });

  it('a host:port entry opens that port of the host only; a name resolving there too', async () => {
    const entries = hostList(`127.0.0.1:${secret.port}, [::1]:4020, tools.internal:8080, Tools.Internal.:9`);
    expect(entries).toEqual([
      `127.0.0.1:${secret.port}`,
      '[::1]:4020',
      'tools.internal:8080',
      'tools.internal:9',
    ]);
    const policy = {
      allowPrivate: false,
      allowHosts: [`127.0.0.1:${secret.port}`, `tools.internal:${secret.port}`],
    };
    const webhooks = createEgressGate({
      purpose: 'webhook',
      policy,
      resolve: async () => [{ address: '127.0.0.1', family: 4 }],
    });
    // Another port of the same host: refused at the door (a URL stored with it) and at the gate.
    const other = secret.port === 65_535 ? secret.port - 1 : secret.port + 1;
    try {
      expect((await webhooks.request(`${secret.url}/listed`, {}, limits)).status).toBe(200);
      expect(
        (await webhooks.request(`http://tools.internal:${secret.port}/by-name`, {}, limits)).status,
      ).toBe(200);
      expect(secret.hits).toHaveLength(2);
      expect(() => checkUrl(`http://127.0.0.1:${other}/`, 'webhook', policy)).toThrow(/private or loopback/);
      const err = await webhooks.request(`http://tools.internal:${other}/`, {}, limits).catch((e) => e);
      expect((err as EgressRefusedError).reason).toBe('no-public-address');
      expect(secret.hits).toHaveLength(2);
    } finally {
      secret.hits.length = 0;
      secret.connections = 0;
      await webhooks.close();
    }
  });

  it('an allowed host does not open its other spellings', async () => {
    const webhooks = createEgressGate({
      purpose: 'webhook',
      policy: { allowPrivate: false, allowHosts: ['tools.internal'] },
    });
    try {
      const err = await webhooks
        .request(`http://[::ffff:7f00:1]:${secret.port}/`, {}, limits)
        .catch((e) => e);
      expect((err as EgressRefusedError).reason).toBe('private-address');
      expect(secret.hits).toEqual([]);
    } finally {
      await webhooks.close();
    }
  });
});
