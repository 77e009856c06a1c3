import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

// Secrets at rest (tenant model credentials, webhook signing secrets): AES-256-GCM with a
// 32-byte key from LOOPLINE_SECRETS_KEY. Each value gets a random 96-bit IV; the associated data
// binds a ciphertext to what it belongs to (e.g. the endpoint URL a credential is for), so a
// sealed value copied to another row or URL does not open.

export interface SecretBox {
  seal(plaintext: string, aad: string): string;
  /** Throws when the value was not sealed with this key and associated data. */
  open(sealed: string, aad: string): string;
}

const VERSION = 'v1';

/** A SecretBox sealing with a 32-byte key. */
export function secretBoxFromKey(key: Buffer): SecretBox {
  if (key.length !== 32)
    throw new Error('LOOPLINE_SECRETS_KEY must be 32 bytes (64 hex or 44 base64 characters)');
  return {
    seal: (plaintext, aad) => sealSecret(key, plaintext, aad),
    open: (sealed, aad) => openSecret(key, sealed, aad),
  };
}

/** LOOPLINE_SECRETS_KEY as 64 hex characters or base64 of 32 bytes; absent → undefined. */
export function secretBoxFromEnv(env: { LOOPLINE_SECRETS_KEY?: string | undefined }): SecretBox | undefined {
  const raw = env.LOOPLINE_SECRETS_KEY?.trim();
  if (!raw) return undefined;
  const key = /^[0-9a-fA-F]{64}$/.test(raw) ? Buffer.from(raw, 'hex') : Buffer.from(raw, 'base64');
  return secretBoxFromKey(key);
}

/** Seals a secret with AES-256-GCM bound to its `aad`. */
export function sealSecret(key: Buffer, plaintext: string, aad: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  const tag = cipher.getAuthTag();
  return [VERSION, iv.toString('base64url'), tag.toString('base64url'), ct.toString('base64url')].join('.');
}

/** Opens a sealed secret; throws when the key or `aad` does not match. */
export function openSecret(key: Buffer, sealed: string, aad: string): string {
  const [version, iv, tag, ct] = sealed.split('.');
  if (version !== VERSION || !iv || !tag || ct === undefined) throw new Error('not a sealed secret');
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
  decipher.setAAD(Buffer.from(aad, 'utf8'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
}

/** Associated data binding a sealed webhook signing secret to its tool. */
export function toolSecretAad(tenantId: string, toolName: string): string {
  return `tool-signing-secret:${tenantId}:${toolName}`;
}

/** Associated data binding a sealed model credential to its agent and endpoint URL. */
export function agentCredentialAad(tenantId: string, agentName: string, baseURL: string): string {
  return `agent-credential:${tenantId}:${agentName}:${baseURL}`;
}

/**
 * A sealed header value as stored: a prefix no tenant value can carry (header values refuse
 * control characters, door.ts), so a value stored before headers were sealed reads as itself.
 */
const SEALED_HEADER = '\u0001';

/** Associated data binding a sealed header value to its tool and header name. */
export function toolHeaderAad(tenantId: string, toolName: string, header: string): string {
  return `tool-header:${tenantId}:${toolName}:${header.toLowerCase()}`;
}

/** A header value as stored: sealed with the box; without one, as it is. */
export function sealToolHeader(
  box: SecretBox | undefined,
  tenantId: string,
  toolName: string,
  header: string,
  value: string,
): string {
  return box ? SEALED_HEADER + box.seal(value, toolHeaderAad(tenantId, toolName, header)) : value;
}

/**
 * A stored header value opened: a sealed one with the box, any other (stored before sealing, or
 * without a key) as it is. Throws when a sealed value does not open (no key, another key).
 */
export function openToolHeader(
  box: SecretBox | undefined,
  tenantId: string,
  toolName: string,
  header: string,
  stored: string,
): string {
  if (!stored.startsWith(SEALED_HEADER)) return stored;
  if (!box)
    throw new Error(`header ${header} of tool ${toolName} is sealed and LOOPLINE_SECRETS_KEY is not set`);
  return box.open(stored.slice(SEALED_HEADER.length), toolHeaderAad(tenantId, toolName, header));
}

/** A tool's stored headers opened (openToolHeader, value by value). */
export function openToolHeaders(
  box: SecretBox | undefined,
  tenantId: string,
  toolName: string,
  headers: Record<string, string>,
): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers).map(([k, v]) => [k, openToolHeader(box, tenantId, toolName, k, v)]),
  );
}
