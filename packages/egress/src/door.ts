import { classifyAddress, isIpLiteral } from './address.ts';
import { EgressRefusedError, refusalMessage } from './errors.ts';
import { type EgressPolicy, type EgressPurpose, hostAllowed, normaliseHost, urlPort } from './policy.ts';

// Checks that need no DNS: what the gateway applies when a tenant stores a URL or headers
// (PUT /v1/tools, PUT /v1/agents, POST …/messages) and what the gate applies again before every
// request. Names are only resolved at connect time (gate.ts), where the address actually used
// is checked; a refusal here never depends on what a name resolves to.

/** Names that always mean this machine, whatever DNS says. */
const LOCAL_NAMES = /(^|\.)localhost$|^localhost\.localdomain$/;

/** Throws EgressRefusedError unless `url` is an http(s) URL the policy lets `purpose` reach. */
export function checkUrl(url: string | URL, purpose: EgressPurpose, policy: EgressPolicy): URL {
  let parsed: URL;
  try {
    parsed = typeof url === 'string' ? new URL(url) : url;
  } catch {
    throw new EgressRefusedError(purpose, 'scheme', `${purpose} URL is not a valid URL`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new EgressRefusedError(
      purpose,
      'scheme',
      `${purpose} URL must be http or https, not ${parsed.protocol.replace(/:$/, '')}`,
    );
  if (parsed.username || parsed.password)
    throw new EgressRefusedError(
      purpose,
      'credentials-in-url',
      `${purpose} URL must not carry credentials (user:password@)`,
    );
  // URL() already turned decimal, octal and hex IPv4 forms into dotted quads.
  const host = normaliseHost(parsed.hostname);
  const port = urlPort(parsed);
  if (isIpLiteral(host)) {
    const klass = classifyAddress(host);
    if (klass === 'metadata') throw refusal(purpose, host, 'metadata');
    if (klass !== 'public' && !policy.allowPrivate && !hostAllowed(policy, host, port))
      throw refusal(purpose, host, 'private');
  } else if (LOCAL_NAMES.test(host) && !policy.allowPrivate && !hostAllowed(policy, host, port)) {
    throw refusal(purpose, host, 'private');
  }
  return parsed;
}

function refusal(purpose: EgressPurpose, host: string, klass: 'private' | 'metadata') {
  return new EgressRefusedError(
    purpose,
    klass === 'metadata' ? 'metadata-address' : 'private-address',
    refusalMessage(purpose, host, klass),
  );
}

/** RFC 9110 token: what a header name may contain. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * Headers a tenant may not set on an outbound request: hop-by-hop headers (RFC 9110 §7.6.1), the
 * framing the client computes itself, the target host, and the signature headers Loopline adds.
 */
export const FORBIDDEN_HEADERS: ReadonlySet<string> = new Set([
  'host',
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'content-length',
  'expect',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
]);

/** The first problem with tenant-supplied headers, or undefined when they may be sent. */
export function headerProblem(headers: Record<string, string>): string | undefined {
  for (const [name, value] of Object.entries(headers)) {
    if (!TOKEN.test(name)) return `header name "${name.slice(0, 64)}" is not a valid HTTP token`;
    if (FORBIDDEN_HEADERS.has(name.toLowerCase()))
      return `header "${name}" is set by Loopline or the HTTP client and may not be overridden`;
    // CR, LF and NUL would split or end the header block; other controls are refused too.
    if (hasControl(value)) return `header "${name}" contains a control character (CR, LF or NUL)`;
  }
  return undefined;
}

/** Any control character except horizontal tab (CR, LF, NUL included). */
function hasControl(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if ((c < 0x20 && c !== 0x09) || c === 0x7f) return true;
  }
  return false;
}

/** Refuses malformed headers and headers Loopline or the HTTP client sets itself. */
export function checkHeaders(purpose: EgressPurpose, headers: Record<string, string>): void {
  const problem = headerProblem(headers);
  if (problem) throw new EgressRefusedError(purpose, 'header', problem);
}
