// What never reaches a log line: credentials in headers, in query strings and in well-known
// fields of logged objects. The gateway and the worker build their pino options from this
// (`redactFields` as the log formatter, `redactUrl` / `redactText` for every logged URL).

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

/** Field names whose values are credentials wherever they appear (headers, options). */
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

const SECRET_KEYS: ReadonlySet<string> = new Set(SECRET_FIELDS.map((f) => f.toLowerCase()));
const MAX_DEPTH = 3;

const isPlainObject = (v: unknown): v is Record<string, unknown> => {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
};

/**
 * The log object with secret fields redacted, up to three plain objects down; copy-on-write, so a
 * line without secrets costs one pass (pino's wildcard `redact` cost ~8×). Class instances are left alone.
 */
export function redactFields<T extends Record<string, unknown>>(value: T, depth = 0): T {
  let out: Record<string, unknown> | undefined;
  for (const key of Object.keys(value)) {
    const v = value[key];
    let next = v;
    if (SECRET_KEYS.has(key.toLowerCase())) next = REDACTED;
    else if (depth < MAX_DEPTH && isPlainObject(v)) next = redactFields(v, depth + 1);
    if (next !== v) {
      out ??= { ...value };
      out[key] = next;
    }
  }
  return (out ?? value) as T;
}

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
 * pino `hooks.logMethod`: the arguments of every log call with secret fields of the merging
 * object redacted (redactFields) and URLs in message strings redacted (redactText).
 */
export function redactLogArguments(args: unknown[]): unknown[] {
  return args.map((a, i) => {
    if (typeof a === 'string') return a.includes('?') || a.includes('@') ? redactText(a) : a;
    return i === 0 && isPlainObject(a) ? redactFields(a) : a;
  });
}
