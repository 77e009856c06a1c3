import { LooplineError, type ToolConfig } from '@loopline/core';
import { type AddressPolicy, assertWebhookAllowed } from './address-policy.ts';

// Runs a webhook tool: POST {callId, sessionId, tool, input} to the tool's URL.
// The response body is the output: JSON {output, title?, metadata?} or plain text.

export interface ToolResult {
  output: string;
  title?: string;
  metadata?: Record<string, unknown>;
}

export async function callWebhook(
  tool: Extract<ToolConfig, { kind: 'webhook' }>,
  call: { callId: string; sessionId: string; tenantId: string; name: string; input: Record<string, unknown> },
  policy: AddressPolicy,
  signal: AbortSignal,
): Promise<ToolResult> {
  await assertWebhookAllowed(tool.url, policy);
  const timeout = AbortSignal.timeout(tool.timeoutMs);
  let res: Response;
  try {
    res = await fetch(tool.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': call.callId, ...tool.headers },
      body: JSON.stringify({
        callId: call.callId,
        sessionId: call.sessionId,
        tool: call.name,
        input: call.input,
      }),
      signal: AbortSignal.any([signal, timeout]),
      redirect: 'error',
    });
  } catch (err) {
    if (timeout.aborted) throw new LooplineError('ToolError', `webhook timed out after ${tool.timeoutMs} ms`);
    throw err;
  }
  const body = await res.text();
  if (!res.ok)
    throw new LooplineError('ToolError', `webhook answered HTTP ${res.status}: ${body.slice(0, 500)}`);
  if ((res.headers.get('content-type') ?? '').includes('application/json')) {
    try {
      const json = JSON.parse(body) as { output?: unknown; title?: unknown; metadata?: unknown };
      if (json && typeof json === 'object' && 'output' in json) {
        return {
          output: typeof json.output === 'string' ? json.output : JSON.stringify(json.output),
          title: typeof json.title === 'string' ? json.title : undefined,
          metadata:
            json.metadata && typeof json.metadata === 'object'
              ? (json.metadata as Record<string, unknown>)
              : undefined,
        };
      }
    } catch {
      // not JSON after all: use the text
    }
  }
  return { output: body };
}
