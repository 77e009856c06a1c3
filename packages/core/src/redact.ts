// What never reaches a log line: credentials in headers, in query strings and in well-known
// fields of logged objects. The gateway and the worker build their pino options from this
// (pino `redact` paths for objects, `redactUrl` for every logged URL).

export const REDACTED = '[REDACTED]';

/** Query parameters whose values are credentials (compared lower-case). */
export const SECRET_QUERY_PARAMS: ReadonlySet<string> = new Set([
  'token',
  'access_token',
  'api_key',
  'apikey',
  'key',
  'secret',
  'password',
  'credential',
  'credentials',
  'authorization',
  'auth',
  'signature',
  'sig',
  'code',
]);

/** Field names whose values are credentials wherever they appear (headers, options, errors). */
const SECRET_FIELDS = [
  'authorization',
  'cookie',
  'set-cookie',
  'x-api-key',
  'proxy-authorization',
  'apiKey',
  'api_key',
  'token',
  'operatorToken',
  'password',
  'secret',
  'credential',
  'credentials',
] as const;

const quoted = (field: string) => (/^[A-Za-z_$][\w$]*$/.test(field) ? `.${field}` : `["${field}"]`);

/**
 * pino `redact` paths: each secret field at the top level and up to three levels down (pino's
 * wildcards match one level each; deeper objects are not logged by Loopline).
 */
export const REDACT_PATHS: readonly string[] = SECRET_FIELDS.flatMap((f) => {
  const q = quoted(f);
  return [q.startsWith('.') ? q.slice(1) : q, `*${q}`, `*.*${q}`, `*.*.*${q}`];
});

/**
 * The URL (absolute, or a path with a query) with the value of every credential query parameter
 * and any `user:password@` replaced by [REDACTED]. Text that is not a URL comes back unchanged.
 */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  let head = q < 0 ? url : url.slice(0, q);
  const hash = url.indexOf('#', Math.max(q, 0));
  const query = q < 0 ? '' : url.slice(q + 1, hash < 0 ? undefined : hash);
  const tail = hash < 0 ? '' : url.slice(hash);
  head = head.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@]*@/i, `$1${REDACTED}@`);
  if (!query) return head + (q < 0 ? '' : '?') + tail;
  const parts = query.split('&').map((pair) => {
    const eq = pair.indexOf('=');
    const rawName = eq < 0 ? pair : pair.slice(0, eq);
    let name = rawName;
    try {
      name = decodeURIComponent(rawName.replaceAll('+', ' '));
    } catch {
      // a malformed name is kept as written
    }
    return SECRET_QUERY_PARAMS.has(name.toLowerCase()) ? `${rawName}=${REDACTED}` : pair;
  });
  return `${head}?${parts.join('&')}${tail}`;
}

const URL_IN_TEXT = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>]+|(?<![\w/])\/[^\s"'<>?]*\?[^\s"'<>]+/gi;

/** Text (an error message, a stack) with every URL in it passed through redactUrl. */
export function redactText(text: string): string {
  return text.replace(URL_IN_TEXT, (url) => redactUrl(url));
}

/**
 * pino `hooks.logMethod`: the message text of every log call (the string arguments) with URLs
 * redacted, for messages that quote a URL (framework errors, fetch failures).
 */
export function redactLogArguments(args: unknown[]): unknown[] {
  return args.map((a) => (typeof a === 'string' && a.includes('?') ? redactText(a) : a));
}
