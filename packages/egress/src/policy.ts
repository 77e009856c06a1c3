// Egress policy per purpose: which private destinations the operator opened for one kind of
// outbound request. Public addresses are always allowed, cloud metadata never. The lists are
// separate on purpose: letting webhooks reach an internal tool server must not let attachments
// or tenant model endpoints reach it too.

export const EGRESS_PURPOSES = ['webhook', 'attachment', 'model'] as const;
export type EgressPurpose = (typeof EGRESS_PURPOSES)[number];

export interface EgressPolicy {
  /** Every private address (loopback, RFC 1918, link-local…) is allowed; metadata still is not. */
  allowPrivate: boolean;
  /** Host names or IP literals (lower case, no brackets) allowed even when they are private. */
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
  const hosts = (list: string[]) => list.map(normaliseHost).filter(Boolean);
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
    .map((h) => normaliseHost(h))
    .filter(Boolean);
}

/** Lower case, without IPv6 brackets or a trailing dot. */
export function normaliseHost(host: string): string {
  return host
    .trim()
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '');
}

/** Whether the policy allows the host by name. */
export function hostAllowed(policy: EgressPolicy, host: string): boolean {
  return policy.allowHosts.includes(normaliseHost(host));
}
