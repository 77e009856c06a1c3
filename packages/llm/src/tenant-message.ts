import { REDACTED } from '@loopline/core';
import { type ClassifiedError, isNetworkCode } from './errors.ts';

// What a tenant reads of a provider failure. A tenant's own endpoint's words are its own and pass
// as they are (a transport failure excepted: its code only, as below). An operator provider's are the deployment's: its internal address and port (a
// refused connection says `connect ECONNREFUSED 10.0.3.7:8000`), its account (a 401 quotes a hint
// of the key, `sk-proj-…wxyz`) and URLs of its network must not reach a tenant. So the tenant
// reads, for an operator provider: a transport failure as "could not be reached" with its code
// only; a refused credential (401/403) as the deployment's to fix; anything else with every URL,
// IP address and key-like token replaced. The worker's log keeps the provider's words whole.

const URL_RE = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>)]+/gi;
// IPv4 with an optional port, and bracketed or bare IPv6 (two or more groups with `::` or 7 colons).
const IPV4_RE = /\b(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?\b/g;
const IPV6_RE = /\[[0-9a-f:.]+\](?::\d{1,5})?|\b(?:[0-9a-f]{1,4}:){2,7}[0-9a-f]{0,4}(?:::?[0-9a-f]{0,4})*/gi;
// API keys as providers print them, whole or masked: sk-…, sk-proj-…, key_…, Bearer tokens.
const KEY_RE = /\b(?:sk|pk|rk|ak|key|api[-_]?key)[-_][\w*.…-]{4,}|\bBearer\s+\S+/gi;

/** The provider failure as a tenant may read it (file header); `own`: the tenant's own endpoint. */
export function tenantFacingMessage(error: ClassifiedError, endpoint: 'operator' | 'own'): string {
  // A transport failure is Node's words, not the endpoint's: they name the address connected to,
  // which for a tenant's own endpoint on a host the operator opened is an internal one.
  if (error.status === undefined && isNetworkCode(error.code))
    return endpoint === 'own'
      ? `the model endpoint could not be reached (${error.code})`
      : `the model provider could not be reached (${error.code})`;
  if (endpoint === 'own') return error.message;
  if (error.status === 401 || error.status === 403)
    return `the model provider refused this deployment's credentials (HTTP ${error.status}); the operator must check them`;
  return error.message
    .replace(URL_RE, '[url]')
    .replace(KEY_RE, REDACTED)
    .replace(IPV6_RE, (m) => (m.includes('::') || m.split(':').length > 3 ? '[address]' : m))
    .replace(IPV4_RE, '[address]');
}
