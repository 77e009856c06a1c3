import type { ToolConfig } from '@loopline/core';
import { type Db, getTool, type ToolInfo } from '@loopline/db';
import { openToolHeader, type SecretBox, sealToolHeader } from '@loopline/egress';

// A webhook tool's headers usually carry the credential of the tenant's tool server
// (`authorization: Bearer …`): with LOOPLINE_SECRETS_KEY set they are stored sealed, value by
// value (AES-256-GCM bound to tenant, tool and header name, egress secrets.ts), as model
// credentials and signing secrets are. The API still shows them opened to their tenant; the worker
// opens them for the call. Without the key they are stored as sent (docs/security.md).

/** What the tools table shows for a tool value that no key here opens (a rotated key). */
export const UNOPENED_HEADER = '(sealed with another LOOPLINE_SECRETS_KEY: put the tool again)';

/**
 * The config to store: header values sealed, a value equal to the stored one's plaintext keeping
 * its sealed form (sealing draws a fresh IV, so an unchanged put would otherwise be a new version).
 */
export async function sealedForStore(
  db: Db,
  box: SecretBox | undefined,
  tenantId: string,
  name: string,
  config: ToolConfig,
): Promise<ToolConfig> {
  if (!box || config.kind !== 'webhook' || Object.keys(config.headers).length === 0) return config;
  const before = await getTool(db, tenantId, name);
  const kept = before?.config.kind === 'webhook' ? before.config.headers : {};
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(config.headers)) {
    const old = kept[k];
    headers[k] =
      old !== undefined && opened(box, tenantId, name, k, old) === v
        ? old
        : sealToolHeader(box, tenantId, name, k, v);
  }
  return { ...config, headers };
}

/** The tool as its tenant sees it: header values opened (one that does not open, marked). */
export function toolView(box: SecretBox | undefined, tenantId: string, tool: ToolInfo): ToolInfo {
  if (tool.config.kind !== 'webhook') return tool;
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(tool.config.headers))
    headers[k] = opened(box, tenantId, tool.name, k, v) ?? UNOPENED_HEADER;
  return { ...tool, config: { ...tool.config, headers } };
}

/** A stored value opened, or undefined when it does not open here (no key, another key). */
function opened(
  box: SecretBox | undefined,
  tenantId: string,
  tool: string,
  header: string,
  stored: string,
): string | undefined {
  try {
    return openToolHeader(box, tenantId, tool, header, stored);
  } catch {
    return undefined;
  }
}
