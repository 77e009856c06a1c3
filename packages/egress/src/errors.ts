import type { EgressPurpose } from './policy.ts';

// The gate's refusals. Messages name the host the tenant wrote, never the address it resolved
// to: a refusal must not tell a tenant what an internal name points at.

export const EGRESS_REFUSED = 'ERR_EGRESS_REFUSED';
export const EGRESS_TOO_LARGE = 'ERR_EGRESS_TOO_LARGE';

export type EgressReason =
  | 'scheme'
  | 'private-address'
  | 'metadata-address'
  | 'no-public-address'
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
  /**
   * For the operator's log only, never shown to a tenant: what a `no-public-address` refusal hides
   * (the name's answer was private, loopback or metadata, or the name did not resolve: ENOTFOUND).
   */
  readonly detail: string | undefined;
  constructor(purpose: EgressPurpose, reason: EgressReason, message: string, detail?: string) {
    super(message);
    this.name = 'EgressRefusedError';
    this.code = reason === 'too-large' ? EGRESS_TOO_LARGE : EGRESS_REFUSED;
    this.purpose = purpose;
    this.reason = reason;
    this.detail = detail;
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

/**
 * The refusal of a NAME that has no address Loopline may connect to. One message whether the name
 * resolved to a private, loopback or metadata address or did not resolve at all: two messages
 * would let a tenant map the operator's internal DNS (which internal names exist) through its
 * webhook and model URLs. `detail` (the operator's log) says which.
 */
export function noPublicAddress(purpose: EgressPurpose, host: string, detail: string): EgressRefusedError {
  return new EgressRefusedError(
    purpose,
    'no-public-address',
    `${purpose} host ${host} has no public address Loopline connects to (it does not resolve, or ` +
      `resolves to a private, loopback or metadata address); the operator can allow a private host ` +
      `with ${envName(purpose)}_ALLOW_HOSTS or ${envName(purpose)}_ALLOW_PRIVATE`,
    detail,
  );
}

/** The environment variable prefix of a purpose's egress settings. */
export function envName(purpose: EgressPurpose): string {
  return purpose === 'webhook'
    ? 'LOOPLINE_WEBHOOK'
    : purpose === 'attachment'
      ? 'LOOPLINE_ATTACHMENT'
      : 'LOOPLINE_MODEL';
}
