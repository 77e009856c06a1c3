// Attachment rules shared by the gateway (checked when a message is posted) and the worker
// (checked again on what it downloads): which media types a message may carry and how large.

/** Media types a message's files may have: what the model providers accept as input. */
export const ATTACHMENT_MEDIA_TYPES: ReadonlySet<string> = new Set([
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/webp',
  'application/pdf',
  'text/plain',
  'text/markdown',
  'text/csv',
  'application/json',
]);

/** Per attachment, decoded (LOOPLINE_ATTACHMENT_MAX_BYTES). */
export const DEFAULT_ATTACHMENT_MAX_BYTES = 10 * 1024 * 1024;

/** Longest http(s) attachment URL accepted. */
export const ATTACHMENT_URL_MAX_CHARS = 8_192;

/** `data:` URL → its media type and decoded size, or undefined when it is not a data URL. */
export function parseDataUrl(url: string): { mime: string; bytes: number; base64: boolean } | undefined {
  const m = /^data:([^,;]*)((?:;[^,;]*)*),/i.exec(url);
  if (!m) return undefined;
  const params = (m[2] ?? '').toLowerCase().split(';');
  const base64 = params.includes('base64');
  const payload = url.slice(m[0].length);
  const bytes = base64
    ? Math.floor((payload.replace(/=+$/, '').length * 3) / 4)
    : decodeURIComponentSafe(payload).length;
  return { mime: (m[1] || 'text/plain').toLowerCase(), bytes, base64 };
}

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
