// Egress policy per purpose: which private destinations the operator opened for one kind of
// outbound request. Public addresses are always allowed, cloud metadata never. The lists are
// separate on purpose: letting webhooks reach an internal tool server must not let attachments
// or tenant model endpoints reach it too.

export const EGRESS_PURPOSES = ['webhook', 'attachment', 'model'] as const;
export type EgressPurpose = (typeof EGRESS_PURPOSES)[number];

export interface EgressPolicy {
  /** Every private address (loopback, RFC 1918, link-local…) is allowed; metadata still is not. */
  allowPrivate: boolean;
  /**
   * Host names or IP literals allowed even when they are private: `host` opens every port of it,
   * `host:port` (`[v6]:port` for IPv6) only that one. Lower case, as normaliseAllowEntry writes them.
   */
  allowHosts: string[];
}

export type EgressPolicies = Record<EgressPurpose, EgressPolicy>;

export const DENY_PRIVATE: EgressPolicy = { allowPrivate: false, allowHosts: [] };

const flag = (v: string | undefined) => v === '1' || v === 'true';

/**
 * LOOPLINE_WEBHOOK_ALLOW_PRIVATE / LOOPLINE_WEBHOOK_ALLOW_HOSTS, LOOPLINE_ATTACHMENT_ALLOW_PRIVATE /
 * LOOPLINE_ATTACHMENT_ALLOW_HOSTS, LOOPLINE_MODEL_ALLOW_PRIVATE / LOOPLINE_MODEL_ALLOW_HOSTS:
 * `1`/`true`, and a comma-separated host list.
 */
export function policiesFromEnv(env: Record<string, string | undefined>): EgressPolicies {
  return {
    webhook: {
      allowPrivate: flag(env.LOOPLINE_WEBHOOK_ALLOW_PRIVATE),
      allowHosts: hostList(env.LOOPLINE_WEBHOOK_ALLOW_HOSTS),
    },
    attachment: {
      allowPrivate: flag(env.LOOPLINE_ATTACHMENT_ALLOW_PRIVATE),
      allowHosts: hostList(env.LOOPLINE_ATTACHMENT_ALLOW_HOSTS),
    },
    model: {
      allowPrivate: flag(env.LOOPLINE_MODEL_ALLOW_PRIVATE),
      allowHosts: hostList(env.LOOPLINE_MODEL_ALLOW_HOSTS),
    },
  };
}

/** The allow-list settings as a process's parsed configuration holds them (core egressEnv). */
export interface EgressSettings {
  LOOPLINE_WEBHOOK_ALLOW_PRIVATE: boolean;
  LOOPLINE_WEBHOOK_ALLOW_HOSTS: string[];
  LOOPLINE_ATTACHMENT_ALLOW_PRIVATE: boolean;
  LOOPLINE_ATTACHMENT_ALLOW_HOSTS: string[];
  LOOPLINE_MODEL_ALLOW_PRIVATE: boolean;
  LOOPLINE_MODEL_ALLOW_HOSTS: string[];
}

/** The egress policies of every purpose from the parsed configuration. */
export function policiesFromConfig(c: EgressSettings): EgressPolicies {
  const hosts = (list: string[]) => list.map(normaliseAllowEntry).filter(Boolean);
  return {
    webhook: {
      allowPrivate: c.LOOPLINE_WEBHOOK_ALLOW_PRIVATE,
      allowHosts: hosts(c.LOOPLINE_WEBHOOK_ALLOW_HOSTS),
    },
    attachment: {
      allowPrivate: c.LOOPLINE_ATTACHMENT_ALLOW_PRIVATE,
      allowHosts: hosts(c.LOOPLINE_ATTACHMENT_ALLOW_HOSTS),
    },
    model: { allowPrivate: c.LOOPLINE_MODEL_ALLOW_PRIVATE, allowHosts: hosts(c.LOOPLINE_MODEL_ALLOW_HOSTS) },
  };
}

/** A comma-separated host list, normalised. */
export function hostList(raw: string | undefined): string[] {
  return (raw ?? '')
    .split(',')
    .map((h) => normaliseAllowEntry(h))
    .filter(Boolean);
}

interface AllowEntry {
  host: string;
  /** Absent: every port of the host. */
  port?: number;
}

const portOf = (text: string) => {
  const port = Number(text);
  return Number.isInteger(port) && port > 0 && port < 65_536 ? port : undefined;
};

/** An allow-list entry: `host`, `host:port`, `[v6]`, `[v6]:port` or a bare IPv6 address (every port). */
function parseAllowEntry(raw: string): AllowEntry {
  const text = raw.trim().toLowerCase();
  const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(text);
  if (bracketed) {
    const port = bracketed[2] !== undefined ? portOf(bracketed[2]) : undefined;
    return port !== undefined ? { host: bracketed[1]!, port } : { host: bracketed[1]! };
  }
  const hostPort = /^([^:]+):(\d{1,5})$/.exec(text);
  const port = hostPort ? portOf(hostPort[2]!) : undefined;
  if (hostPort && port !== undefined) return { host: normaliseHost(hostPort[1]!), port };
  return { host: normaliseHost(text) };
}

/** An allow-list entry as the policy keeps it: `host`, `host:port` or `[v6]:port`. */
export function normaliseAllowEntry(raw: string): string {
  const { host, port } = parseAllowEntry(raw);
  if (!host || port === undefined) return host;
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** Lower case, without IPv6 brackets or a trailing dot. */
export function normaliseHost(host: string): string {
  return host
    .trim()
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '');
}

/** Whether the policy allows the host by name, on this port (an entry without one: every port). */
export function hostAllowed(policy: EgressPolicy, host: string, port: number): boolean {
  const name = normaliseHost(host);
  return policy.allowHosts.some((raw) => {
    const entry = parseAllowEntry(raw);
    return entry.host === name && (entry.port === undefined || entry.port === port);
  });
}

/** The port a URL connects to (its own, or its scheme's). */
export function urlPort(url: URL): number {
  return url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
}
