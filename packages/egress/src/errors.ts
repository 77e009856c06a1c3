import type { EgressPurpose } from './policy.ts';

// The gate's refusals. Messages name the host the tenant wrote, never the address it resolved
// to: a refusal must not tell a tenant what an internal name points at.

export const EGRESS_REFUSED = 'ERR_EGRESS_REFUSED';
export const EGRESS_TOO_LARGE = 'ERR_EGRESS_TOO_LARGE';

export type EgressReason =
  | 'scheme'
  | 'private-address'
  | 'metadata-address'
  | 'credentials-in-url'
  | 'redirect'
  | 'too-large'
  | 'timeout'
  | 'header';

/** A request the gate will not make (or stopped): permanent, never worth a retry. */
export class EgressRefusedError extends Error {
  readonly code: string;
  readonly purpose: EgressPurpose;
  readonly reason: EgressReason;
  constructor(purpose: EgressPurpose, reason: EgressReason, message: string) {
    super(message);
    this.name = 'EgressRefusedError';
    this.code = reason === 'too-large' ? EGRESS_TOO_LARGE : EGRESS_REFUSED;
    this.purpose = purpose;
    this.reason = reason;
  }
}

/** The gate's refusal anywhere in an error's cause chain (fetch wraps it in TypeError). */
export function findEgressRefusal(error: unknown): EgressRefusedError | undefined {
  for (let e: unknown = error, depth = 0; e && typeof e === 'object' && depth < 6; depth++) {
    if (e instanceof EgressRefusedError) return e;
    const rec = e as { cause?: unknown; errors?: unknown };
    if (Array.isArray(rec.errors)) {
      for (const inner of rec.errors) {
        const found = findEgressRefusal(inner);
        if (found) return found;
      }
    }
    e = rec.cause;
  }
  return undefined;
}

/** The message of a refused private or metadata address, with the setting that allows it. */
export function refusalMessage(purpose: EgressPurpose, host: string, klass: 'private' | 'metadata'): string {
  const what = klass === 'metadata' ? 'a cloud metadata address' : 'a private or loopback address';
  const hint =
    klass === 'metadata'
      ? ''
      : `; the operator can allow it with ${envName(purpose)}_ALLOW_HOSTS or ${envName(purpose)}_ALLOW_PRIVATE`;
  return `${purpose} host ${host} is ${what}, which Loopline does not connect to${hint}`;
}

/** The environment variable prefix of a purpose's egress settings. */
export function envName(purpose: EgressPurpose): string {
  return purpose === 'webhook'
    ? 'LOOPLINE_WEBHOOK'
    : purpose === 'attachment'
      ? 'LOOPLINE_ATTACHMENT'
      : 'LOOPLINE_MODEL';
}
