// Message shape for strict chat templates (docs/models.md): many Jinja templates (Mistral, Gemma
// and others) reject two user or two assistant messages in a row, or a `system` message at all.
// Pure rewrites of the messages about to be sent; the log and the model view are untouched.

import type { ModelMessage, UserModelMessage } from './model-message.ts';

/**
 * Merges each run of consecutive same-role user (or assistant) messages into one, content in
 * order, so the synthetic "Continue…" text or a steer message joins the user message next to it.
 * Tool messages are never merged (each answers its own calls).
 */
export function alternateRoles(messages: readonly ModelMessage[]): ModelMessage[] {
  const out: ModelMessage[] = [];
  for (const m of messages) {
    const prev = out.at(-1);
    if (prev && prev.role === m.role && m.role === 'user') {
      out[out.length - 1] = { role: 'user', content: [...(prev as UserModelMessage).content, ...m.content] };
    } else if (prev && prev.role === 'assistant' && m.role === 'assistant') {
      out[out.length - 1] = { role: 'assistant', content: [...prev.content, ...m.content] };
    } else out.push(m);
  }
  return out;
}

/**
 * For templates without a system role: the system blocks become the opening text of the first
 * user message (a user message is added at the front when the conversation starts otherwise).
 */
export function foldSystemIntoUser(
  system: readonly string[],
  messages: readonly ModelMessage[],
): ModelMessage[] {
  const text = system.filter((b) => b.trim() !== '').join('\n\n');
  if (text === '') return [...messages];
  const first = messages.findIndex((m) => m.role === 'user');
  const block = { type: 'text' as const, text };
  if (first < 0 || first > 0) return [{ role: 'user', content: [block] }, ...messages];
  const out = [...messages];
  const user = out[0] as UserModelMessage;
  out[0] = { role: 'user', content: [block, ...user.content] };
  return out;
}

/** The messages as a template with these capabilities accepts them. */
export function shapeForTemplate(
  system: readonly string[],
  messages: readonly ModelMessage[],
  caps: { strictAlternation?: boolean; systemRole?: boolean },
): { system: string[]; messages: ModelMessage[] } {
  let out = [...messages];
  let sys = [...system];
  if (caps.systemRole === false) {
    out = foldSystemIntoUser(sys, out);
    sys = [];
  }
  if (caps.strictAlternation) out = alternateRoles(out);
  return { system: sys, messages: out };
}
