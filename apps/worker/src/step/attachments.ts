import { LooplineError, type WithParts } from '@loopline/core';
import { loadAttachments, saveAttachment } from '@loopline/db';
import { EgressRefusedError } from '@loopline/egress';
import type { WorkerDeps } from '../deps.ts';
import { egressOf } from '../egress.ts';

// The bytes of a model call's http(s) attachments: each URL is fetched once, through the
// attachment egress gate (address checked at connect, no redirects, size and time caps), and
// stored in `attachments` for every later step; the AI SDK never downloads (core
// to-model-messages.ts `fileData`). A refused or failed download is a permanent AttachmentError.

/** The bytes of the history's http(s) file parts by part id: stored ones, else fetched and stored. */
export async function attachmentBytes(
  deps: Pick<WorkerDeps, 'db' | 'egress'>,
  ctx: { tenantId: string; sessionId: string },
  history: WithParts[],
  signal: AbortSignal,
): Promise<Map<string, Uint8Array>> {
  const wanted: Array<{ id: string; url: string; mime: string }> = [];
  for (const m of history)
    for (const p of m.parts)
      if (p.type === 'file' && /^https?:/i.test(p.url)) wanted.push({ id: p.id, url: p.url, mime: p.mime });
  const out = new Map<string, Uint8Array>();
  if (wanted.length === 0) return out;
  const stored = await loadAttachments(
    deps.db,
    ctx.tenantId,
    wanted.map((w) => w.id),
  );
  for (const [id, a] of stored) out.set(id, new Uint8Array(a.data));
  const egress = egressOf(deps);
  for (const file of wanted) {
    if (out.has(file.id)) continue;
    const data = await download(egress, file.url, signal);
    await saveAttachment(deps.db, { ...ctx, partId: file.id, mime: file.mime, data });
    out.set(file.id, new Uint8Array(data));
  }
  return out;
}

async function download(
  egress: ReturnType<typeof egressOf>,
  url: string,
  signal: AbortSignal,
): Promise<Buffer> {
  const where = safeLabel(url);
  let res: Awaited<ReturnType<typeof egress.gates.attachment.request>>;
  try {
    res = await egress.gates.attachment.request(
      url,
      { method: 'GET', signal },
      { maxBytes: egress.attachmentMaxBytes, timeoutMs: egress.attachmentTimeoutMs },
    );
  } catch (err) {
    if (signal.aborted) throw err;
    const why = err instanceof EgressRefusedError ? err.message : 'the server could not be reached';
    throw attachmentError(`attachment ${where} was not fetched: ${why}`, err);
  }
  if (res.status < 200 || res.status >= 300)
    throw attachmentError(`attachment ${where} was not fetched: the server answered HTTP ${res.status}`);
  return res.body;
}

function attachmentError(message: string, cause?: unknown): LooplineError {
  const reason = cause instanceof EgressRefusedError ? cause.reason : undefined;
  return new LooplineError('AttachmentError', message, { retryable: false, ...(reason ? { reason } : {}) });
}

/** The URL as the tenant wrote it, without query or credentials, shortened for a message. */
function safeLabel(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`.slice(0, 200);
  } catch {
    return '(invalid URL)';
  }
}
