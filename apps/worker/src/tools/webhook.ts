import { randomUUID } from 'node:crypto';
import { LooplineError, storableText, storableValue, type ToolConfig } from '@loopline/core';
import { getToolSigningSecret } from '@loopline/db';
import {
  checkHeaders,
  type EgressReason,
  EgressRefusedError,
  openToolHeaders,
  signWebhook,
  toolSecretAad,
} from '@loopline/egress';
import type { WorkerDeps } from '../deps.ts';
import { egressOf } from '../egress.ts';

/** Refusals of the target itself (not of its answer): the tool is misconfigured, not failing. */
const REFUSED_TARGETS: ReadonlySet<EgressReason> = new Set([
  'private-address',
  'metadata-address',
  'no-public-address',
  'scheme',
]);

// Runs a webhook tool: POST {callId, sessionId, tool, input} to the tool's URL through the
// webhook egress gate (address checked at connect, redirects refused, answer read with a byte and
// time cap), signed with the tool's secret (Standard Webhooks headers, docs/security.md). The
// response body is the output: JSON {output, title?, metadata?} or plain text.

export interface ToolResult {
  output: string;
  title?: string;
  metadata?: Record<string, unknown>;
}

/** Calls a webhook tool through the egress gate, signed when the tool has a secret. */
export async function callWebhook(
  deps: Pick<WorkerDeps, 'db' | 'egress' | 'secrets' | 'logger'>,
  tool: Extract<ToolConfig, { kind: 'webhook' }>,
  call: { callId: string; sessionId: string; tenantId: string; name: string; input: Record<string, unknown> },
  signal: AbortSignal,
): Promise<ToolResult> {
  const egress = egressOf(deps);
  const body = JSON.stringify({
    callId: call.callId,
    sessionId: call.sessionId,
    tool: call.name,
    input: call.input,
  });
  const secret = await signingSecret(deps, call.tenantId, call.name);
  const headers = openedHeaders(deps, call.tenantId, call.name, tool.headers);
  const maxBytes = Math.min(tool.maxResponseBytes ?? egress.webhookMaxBytes, egress.webhookMaxBytes);
  let res: Awaited<ReturnType<typeof egress.gates.webhook.request>>;
  try {
    // The same header rules PUT /v1/tools applied (a tool stored before them is refused here).
    checkHeaders('webhook', headers);
    res = await egress.gates.webhook.request(
      tool.url,
      {
        method: 'POST',
        headers: {
          ...headers,
          'content-type': 'application/json',
          'idempotency-key': call.callId,
          ...(secret ? signWebhook(secret, `msg_${randomUUID()}`, body) : {}),
        },
        body,
        signal,
      },
      { maxBytes, timeoutMs: tool.timeoutMs },
    );
  } catch (err) {
    if (err instanceof EgressRefusedError) {
      // The refusal rides along as the cause: its `detail` is for the worker's log, never the tenant.
      if (REFUSED_TARGETS.has(err.reason))
        throw Object.assign(new LooplineError('WebhookRefusedError', err.message), { cause: err });
      throw new LooplineError('ToolError', err.message);
    }
    throw err;
  }
  const text = res.body.toString('utf8');
  if (res.status < 200 || res.status >= 300)
    throw new LooplineError('ToolError', `webhook answered HTTP ${res.status}: ${text.slice(0, 500)}`);
  if ((res.headers['content-type'] ?? '').includes('application/json')) {
    try {
      const json = JSON.parse(text) as { output?: unknown; title?: unknown; metadata?: unknown };
      if (json && typeof json === 'object' && 'output' in json) {
        // The answer's strings are the tool server's: made storable (core storable.ts) here.
        return {
          output: storableText(typeof json.output === 'string' ? json.output : JSON.stringify(json.output)),
          title: typeof json.title === 'string' ? storableText(json.title) : undefined,
          metadata:
            json.metadata && typeof json.metadata === 'object'
              ? storableValue(json.metadata as Record<string, unknown>)
              : undefined,
        };
      }
    } catch {
      // not JSON after all: use the text
    }
  }
  return { output: storableText(text) };
}

/** The tool's headers as sent: values sealed at rest opened (the gateway's lib/tool-headers.ts). */
function openedHeaders(
  deps: Pick<WorkerDeps, 'secrets'>,
  tenantId: string,
  name: string,
  stored: Record<string, string>,
): Record<string, string> {
  try {
    return openToolHeaders(deps.secrets, tenantId, name, stored);
  } catch {
    // No key, or another one: refuse rather than send the tool server a header it cannot use.
    throw new LooplineError(
      'ConfigError',
      `a header of tool "${name}" is sealed and cannot be opened with LOOPLINE_SECRETS_KEY: put the tool again`,
    );
  }
}

/** The tool's signing secret, opened; undefined (unsigned call) when none is stored or no key is set. */
async function signingSecret(
  deps: Pick<WorkerDeps, 'db' | 'secrets' | 'logger'>,
  tenantId: string,
  name: string,
): Promise<string | undefined> {
  if (!deps.secrets) return undefined;
  const sealed = await getToolSigningSecret(deps.db, tenantId, name);
  if (!sealed) return undefined;
  try {
    return deps.secrets.open(sealed, toolSecretAad(tenantId, name));
  } catch {
    // A rotated LOOPLINE_SECRETS_KEY: refuse rather than send an unsigned call the server rejects.
    throw new LooplineError(
      'ConfigError',
      `the signing secret of tool "${name}" cannot be opened with LOOPLINE_SECRETS_KEY`,
    );
  }
}
