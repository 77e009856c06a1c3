// The deterministic compaction summary of the `{ summary: true }` reply: the sections of
// Loopline's summary template (docs/context.md §5) filled from the request alone. Same request,
// same summary, byte for byte; never calls anything.

import type { Conversation } from './conversation.ts';

const clip = (s: string, n: number): string => {
  const flat = s.replace(/\s+/g, ' ').trim();
  return flat.length > n ? `${flat.slice(0, n)}…` : flat;
};

const FILE_LIKE = /(?:\.{0,2}\/)?(?:[\w@-]+\/)*[\w@-]+\.[a-z][a-z0-9]{0,7}\b/gi;

function relevantFiles(texts: string[]): string[] {
  const seen = new Set<string>();
  for (const t of texts) {
    for (const m of t.matchAll(FILE_LIKE)) {
      const path = m[0];
      // Skip bare numbers with a dot and version-like tokens.
      if (/^\d/.test(path)) continue;
      seen.add(path);
      if (seen.size >= 10) return [...seen];
    }
  }
  return [...seen];
}

/** A deterministic summary of a conversation. */
export function summarise(conv: Conversation): string {
  const users = conv.messages.filter((m) => m.role === 'user').map((m) => m.text);
  const assistants = conv.messages.filter((m) => m.role === 'assistant');
  const results = conv.messages.filter((m) => m.role === 'tool');
  const first = users[0] ?? '';
  const lastUser = users.at(-1) ?? '';
  const middle = users.slice(1, -1).slice(-5);
  const toolNames = [...new Set(results.map((r) => r.toolName || 'unknown'))];
  const lastAssistant = [...assistants].reverse().find((a) => a.text.trim() !== '');
  const allTexts = conv.messages.map((m) =>
    m.role === 'assistant' ? `${m.text}\n${m.toolCalls.map((c) => c.arguments).join('\n')}` : m.text,
  );
  const files = relevantFiles(allTexts);

  const lines: string[] = [];
  lines.push('## Goal', '', `- ${clip(first, 200) || 'Unknown'}`, '');
  lines.push('## Instructions', '');
  if (middle.length === 0) lines.push('- None beyond the goal');
  for (const u of middle) lines.push(`- ${clip(u, 120)}`);
  lines.push('');
  lines.push('## Discoveries', '', `- ${results.length} tool result(s)`);
  if (toolNames.length > 0) lines.push(`- Tools used: ${toolNames.join(', ')}`);
  for (const r of results.slice(-3)) lines.push(`- ${r.toolName || 'tool'}: ${clip(r.text, 80)}`);
  lines.push('');
  lines.push('## Accomplished', '', `- ${assistants.length} assistant message(s)`);
  if (lastAssistant) lines.push(`- Last answer: ${clip(lastAssistant.text, 120)}`);
  lines.push(`- Last request: ${clip(lastUser, 120) || 'none'}`);
  lines.push('');
  lines.push('## Relevant files', '');
  if (files.length === 0) lines.push('- None');
  for (const f of files) lines.push(`- ${f}`);
  return lines.join('\n');
}
