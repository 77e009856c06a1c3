import {
  createEgressGate,
  DENY_PRIVATE,
  type EgressGate,
  type EgressPolicies,
  type EgressPurpose,
  type Resolve,
} from '@loopline/egress';
import { perDeps } from './per-deps.ts';

// The worker's egress gates (packages/egress): one per purpose, made once per process (each
// holds its own connection pool), with the byte and time caps the operator set.

/** Hard ceiling of a webhook answer, whatever the tool asks (LOOPLINE_WEBHOOK_MAX_BYTES). */
export const WEBHOOK_MAX_BYTES = 4 * 1024 * 1024;
/** Per attachment (LOOPLINE_ATTACHMENT_MAX_BYTES). */
export const ATTACHMENT_MAX_BYTES = 10 * 1024 * 1024;
export const ATTACHMENT_TIMEOUT_MS = 30_000;
/** All attachments of one model request (LOOPLINE_ATTACHMENT_MAX_TOTAL_BYTES). */
export const ATTACHMENT_MAX_TOTAL_BYTES = 50 * 1024 * 1024;

export interface WorkerEgress {
  gates: Record<EgressPurpose, EgressGate>;
  webhookMaxBytes: number;
  attachmentMaxBytes: number;
  attachmentTimeoutMs: number;
  attachmentMaxTotalBytes: number;
}

/** Creates the worker's egress gates, one per purpose. */
export function workerEgress(
  policies: Partial<EgressPolicies> = {},
  opts: {
    resolve?: Resolve;
    webhookMaxBytes?: number;
    attachmentMaxBytes?: number;
    attachmentTimeoutMs?: number;
    attachmentMaxTotalBytes?: number;
  } = {},
): WorkerEgress {
  const gate = (purpose: EgressPurpose) =>
    createEgressGate({
      purpose,
      policy: policies[purpose] ?? DENY_PRIVATE,
      ...(opts.resolve ? { resolve: opts.resolve } : {}),
    });
  return {
    gates: { webhook: gate('webhook'), attachment: gate('attachment'), model: gate('model') },
    webhookMaxBytes: opts.webhookMaxBytes ?? WEBHOOK_MAX_BYTES,
    attachmentMaxBytes: opts.attachmentMaxBytes ?? ATTACHMENT_MAX_BYTES,
    attachmentTimeoutMs: opts.attachmentTimeoutMs ?? ATTACHMENT_TIMEOUT_MS,
    attachmentMaxTotalBytes: opts.attachmentMaxTotalBytes ?? ATTACHMENT_MAX_TOTAL_BYTES,
  };
}

const defaultEgress = perDeps((_deps: object) => workerEgress());

/** The deps' gates; deps without any get gates that refuse every private address (made once). */
export function egressOf(deps: { egress?: WorkerEgress | undefined }): WorkerEgress {
  return deps.egress ?? defaultEgress(deps);
}

/** Closes every gate's connections (shutdown). */
export async function closeEgress(egress: WorkerEgress): Promise<void> {
  await Promise.all(Object.values(egress.gates).map((g) => g.close()));
}
