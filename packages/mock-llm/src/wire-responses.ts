// Responses API wire format (POST /v1/responses): the `response` object and its SSE event
// sequence (response.created … response.completed), as @ai-sdk/openai's responses parser
// reads them. Pure: turns a Plan into JSON values; never touches the socket.

import { type OutputPlan, splitText, type UsageNumbers } from './plan.ts';
import type { WireMeta } from './wire-chat.ts';

export interface SseEvent {
  event: string;
  data: Record<string, unknown>;
}

/** The Responses API `usage` object. */
export function responsesUsage(u: UsageNumbers): Record<string, unknown> {
  return {
    input_tokens: u.input,
    input_tokens_details: {
      cached_tokens: u.cached,
      ...(u.cacheWrite !== undefined ? { cache_write_tokens: u.cacheWrite } : {}),
    },
    output_tokens: u.output,
    output_tokens_details: { reasoning_tokens: u.reasoning },
    total_tokens: u.input + u.output,
  };
}

interface Ids {
  reasoning: string;
  message: string;
  functionCalls: string[];
}

function idsFor(plan: OutputPlan, meta: WireMeta): Ids {
  const suffix = meta.id.replace(/^resp_/, '');
  return {
    reasoning: `rs_${suffix}`,
    message: `msg_${suffix}`,
    functionCalls: plan.toolCalls.map((_, i) => `fc_${suffix}_${i}`),
  };
}

const reasoningItem = (id: string, text: string) => ({
  type: 'reasoning',
  id,
  summary: text === '' ? [] : [{ type: 'summary_text', text }],
  encrypted_content: null,
});

const messageItem = (id: string, text: string, status: string) => ({
  type: 'message',
  id,
  status,
  role: 'assistant',
  content: status === 'completed' ? [{ type: 'output_text', text, annotations: [], logprobs: [] }] : [],
});

const functionCallItem = (id: string, call: OutputPlan['toolCalls'][number], status: string) => ({
  type: 'function_call',
  id,
  call_id: call.id,
  name: call.name,
  arguments: status === 'completed' ? call.arguments : '',
  status,
});

function outputItems(plan: OutputPlan, ids: Ids): Array<Record<string, unknown>> {
  const items: Array<Record<string, unknown>> = [];
  if (plan.reasoning !== '') items.push(reasoningItem(ids.reasoning, plan.reasoning));
  if (plan.text !== '' || plan.toolCalls.length === 0)
    items.push(messageItem(ids.message, plan.text, 'completed'));
  for (const [i, call] of plan.toolCalls.entries()) {
    items.push(functionCallItem(ids.functionCalls[i]!, call, 'completed'));
  }
  return items;
}

function finalStatus(plan: OutputPlan): { status: string; incomplete_details: { reason: string } | null } {
  if (plan.finishReason === 'length')
    return { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } };
  if (plan.finishReason === 'content_filter') {
    return { status: 'incomplete', incomplete_details: { reason: 'content_filter' } };
  }
  return { status: 'completed', incomplete_details: null };
}

function responseObject(plan: OutputPlan, meta: WireMeta, done: boolean): Record<string, unknown> {
  const ids = idsFor(plan, meta);
  return {
    id: meta.id,
    object: 'response',
    created_at: meta.created,
    model: meta.model,
    ...(done ? finalStatus(plan) : { status: 'in_progress', incomplete_details: null }),
    error: null,
    output: done ? outputItems(plan, ids) : [],
    usage: done ? responsesUsage(plan.usage) : null,
    store: false,
  };
}

/** A whole (non-streamed) Responses API answer. */
export function responsesBody(plan: OutputPlan, meta: WireMeta): Record<string, unknown> {
  return responseObject(plan, meta, true);
}

/** The streamed Responses API events of an answer. */
export function responsesEvents(plan: OutputPlan, meta: WireMeta): SseEvent[] {
  const ids = idsFor(plan, meta);
  const events: SseEvent[] = [];
  const push = (type: string, data: Record<string, unknown>) =>
    events.push({ event: type, data: { type, sequence_number: events.length, ...data } });
  let outputIndex = 0;

  push('response.created', { response: responseObject(plan, meta, false) });
  push('response.in_progress', { response: responseObject(plan, meta, false) });

  if (plan.reasoning !== '') {
    const at = { item_id: ids.reasoning, output_index: outputIndex, summary_index: 0 };
    push('response.output_item.added', { output_index: outputIndex, item: reasoningItem(ids.reasoning, '') });
    push('response.reasoning_summary_part.added', { ...at, part: { type: 'summary_text', text: '' } });
    for (const delta of splitText(plan.reasoning))
      push('response.reasoning_summary_text.delta', { ...at, delta });
    push('response.reasoning_summary_text.done', { ...at, text: plan.reasoning });
    push('response.reasoning_summary_part.done', {
      ...at,
      part: { type: 'summary_text', text: plan.reasoning },
    });
    push('response.output_item.done', {
      output_index: outputIndex,
      item: reasoningItem(ids.reasoning, plan.reasoning),
    });
    outputIndex++;
  }

  if (plan.text !== '' || plan.toolCalls.length === 0) {
    const at = { item_id: ids.message, output_index: outputIndex, content_index: 0 };
    push('response.output_item.added', {
      output_index: outputIndex,
      item: messageItem(ids.message, '', 'in_progress'),
    });
    push('response.content_part.added', { ...at, part: { type: 'output_text', text: '', annotations: [] } });
    for (const delta of plan.textChunks) push('response.output_text.delta', { ...at, delta, logprobs: [] });
    push('response.output_text.done', { ...at, text: plan.text, logprobs: [] });
    push('response.content_part.done', {
      ...at,
      part: { type: 'output_text', text: plan.text, annotations: [] },
    });
    push('response.output_item.done', {
      output_index: outputIndex,
      item: messageItem(ids.message, plan.text, 'completed'),
    });
    outputIndex++;
  }

  for (const [i, call] of plan.toolCalls.entries()) {
    const itemId = ids.functionCalls[i]!;
    push('response.output_item.added', {
      output_index: outputIndex,
      item: functionCallItem(itemId, call, 'in_progress'),
    });
    for (const delta of splitText(call.arguments, Math.min(3, Math.max(1, call.arguments.length)))) {
      push('response.function_call_arguments.delta', { item_id: itemId, output_index: outputIndex, delta });
    }
    push('response.function_call_arguments.done', {
      item_id: itemId,
      output_index: outputIndex,
      arguments: call.arguments,
    });
    push('response.output_item.done', {
      output_index: outputIndex,
      item: functionCallItem(itemId, call, 'completed'),
    });
    outputIndex++;
  }

  const final = responseObject(plan, meta, true);
  push(final.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response: final });
  return events;
}
