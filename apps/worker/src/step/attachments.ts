import { LooplineError, type WithParts } from '@loopline/core';
import { loadAttachmentsWithin, saveAttachment } from '@loopline/db';
import { EgressRefusedError } from '@loopline/egress';
import type { WorkerDeps } from '../deps.ts';
import { egressOf } from '../egress.ts';

// The bytes of a model call's http(s) attachments: each URL is fetched once, through the
// attachment egress gate (address checked at connect, no redirects, size and time caps), and
// stored in `attachments` for every later step; the AI SDK never downloads (core
// to-model-messages.ts `fileData`). A refused or failed download is a permanent AttachmentError.
// One request carries at most `attachmentMaxTotalBytes` of files (downloads and data: URLs of the
// history since the boundary): a file counts a fixed number of tokens whatever its size, so the
// window does not bound them, and without this cap a tenant's message of many large files would be
// held in the worker's memory all at once (docs/security.md, "Attachments").

/** The bytes of the history's http(s) file parts by part id: stored ones, else fetched and stored. */
export async function attachmentBytes(
  deps: Pick<WorkerDeps, 'db' | 'egress'>,
  ctx: { tenantId: string; sessionId: string },
  history: WithParts[],
  signal: AbortSignal,
): Promise<Map<string, Uint8Array>> {
  const wanted: Array<{ id: string; url: string; mime: string }> = [];
  let inline = 0;
  for (const m of history)
    for (const p of m.parts) {
      if (p.type !== 'file') continue;
      if (/^https?:/i.test(p.url)) wanted.push({ id: p.id, url: p.url, mime: p.mime });
      else inline += dataUrlBytes(p.url);
    }
  const out = new Map<string, Uint8Array>();
  const egress = egressOf(deps);
  const budget = egress.attachmentMaxTotalBytes;
  if (inline > budget) throw overBudget(inline, budget);
  if (wanted.length === 0) return out;
  // One statement: the stored bytes are read only when they fit what the data: URLs left.
  const stored = await loadAttachmentsWithin(
    deps.db,
    ctx.tenantId,
    wanted.map((w) => w.id),
    budget - inline,
  );
  let total = inline + stored.total;
  if (!stored.records) throw overBudget(total, budget);
  for (const [id, a] of stored.records) out.set(id, new Uint8Array(a.data));
  for (const file of wanted) {
    if (out.has(file.id)) continue;
    // A download may take what is left of the budget, and no more than the per-file cap.
    const left = budget - total;
    if (left <= 0) throw overBudget(total + 1, budget);
    const capped = left < egress.attachmentMaxBytes;
    const data = await download(egress, file.url, signal, capped ? left : egress.attachmentMaxBytes).catch(
      (err: unknown) => {
        // Over what was left of the budget, not over the per-file cap: say which limit it was.
        const why = err instanceof LooplineError ? err.data : undefined;
        throw capped && why?.reason === 'too-large' ? overBudget(budget + 1, budget) : err;
      },
    );
    total += data.length;
    await saveAttachment(deps.db, { ...ctx, partId: file.id, mime: file.mime, data });
    out.set(file.id, new Uint8Array(data));
  }
  return out;
}

/** The decoded size of a data: URL's payload (base64 or percent-encoded; an upper bound). */
function dataUrlBytes(url: string): number {
  const comma = url.indexOf(',');
  const payload = url.length - comma - 1;
  return /;base64,/i.test(url.slice(0, comma + 1)) ? Math.floor((payload * 3) / 4) : payload;
}

function overBudget(total: number, budget: number): LooplineError {
  return attachmentError(
    `the files of this conversation since its last compaction come to more than ${budget} bytes ` +
      `(at least ${total}), the most one model request carries: compact the session or start a new one`,
  );
}

async function download(
  egress: ReturnType<typeof egressOf>,
  url: string,
  signal: AbortSignal,
  maxBytes: number,
): Promise<Buffer> {
  const where = safeLabel(url);
  let res: Awaited<ReturnType<typeof egress.gates.attachment.request>>;
  try {
    res = await egress.gates.attachment.request(
      url,
      { method: 'GET', signal },
      { maxBytes, timeoutMs: egress.attachmentTimeoutMs },
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
