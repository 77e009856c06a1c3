import type {
  Part,
  RatioState,
  ReasoningPart,
  SessionEvent,
  TextPart,
  Tokenizer,
  ToolPart,
  Usage,
} from '@loopline/core';
import { countPart, deriveOutputTokens, newId, withOutputTokens } from '@loopline/core';
import { insertPart, insertParts, type Trx, updatePart } from '@loopline/db';
import type { SessionWriter } from '../session-writer.ts';

// Turns the model stream into persisted parts. Deltas go to the event stream at once and to
// PostgreSQL at most every FLUSH_MS (and, once the reply is long, when it grew by a quarter:
// flushDue), so a crash keeps a long stream's partial text. Eager mode (the
// summary) writes and counts each part as it starts and ends; deferred mode (the step) writes only
// the flush and leaves the rest to the caller's transaction (`persist`, `collect`): a death before
// it leaves an unfinished message, closed as interrupted (docs/durability.md §5). Parts go in the
// order they started (parts.seq is history order); deferred parts are counted in `settle`.

const FLUSH_MS = 1_000;
/**
 * A flush rewrites the parts whole. Past this many streamed characters the next one also waits
 * until the reply grew by a quarter since the last: a long reply streamed slowly (a tenant's own
 * endpoint may drip for the call's whole time budget) would otherwise write the square of its
 * length; this way a reply of n characters is written at most about 5n over its flushes, and below
 * it at most this many characters a second.
 */
export const FLUSH_GROWTH_FROM = 16_384;

/** Whether a flush is due: a second since the last, and enough new text once the reply is long. */
export function flushDue(elapsedMs: number, streamed: number, flushed: number): boolean {
  if (elapsedMs < FLUSH_MS) return false;
  return flushed < FLUSH_GROWTH_FROM || streamed - flushed >= flushed / 4;
}
/**
 * How long the step's deltas wait before a publish: a shorter stream goes out with the step's
 * next write, one publish per step (docs/durability.md §9); a person does not see 20 ms.
 */
export const DELTA_LINGER_MS = 20;

type Streaming = TextPart | ReasoningPart;

interface Entry {
  part: Part;
  /** The row exists (inserted by a flush or an eager write). */
  persisted: boolean;
  /** The row is behind `part`. */
  dirty: boolean;
  /** Deferred mode: finished, its token counts not set yet (settle). */
  uncounted?: boolean;
}

export interface PersistOptions {
  /** Tool calls to insert `running` (not `pending`): those this runner executes, not deferred ones. */
  running?: (call: ToolPart) => boolean;
  /** New parts of the message to insert after the stream's (e.g. the step-finish). */
  append?: Part[];
}

/** Records one model stream of a message as parts and events (eager or deferred, file header). */
export class StreamRecorder {
  private readonly open = new Map<string, Entry>();
  /** Every part of the stream, in the order it started. */
  private readonly entries: Entry[] = [];
  /** Tool calls in stream order (as persisted, once persist ran). */
  tools: ToolPart[] = [];
  /** Ids of the text and reasoning parts written, in order (a discarded summary attempt ignores them). */
  readonly written: string[] = [];
  private lastFlush = Date.now();
  /** Characters streamed so far, and as many as there were at the last flush (flushDue). */
  private streamed = 0;
  private flushed = 0;
  /** Deferred mode: a part.updated of a block start, sent with the block's first delta. */
  private pendingEvents: SessionEvent[] = [];
  /** Committed events of the caller's start, held for the first publish or the next write (`takeHeld`). */
  private held: SessionEvent[] = [];
  /**
   * Deltas not published yet: one publish in flight, later deltas go with the next, so the stream
   * never waits for Redis. Every write and `endAll` drains them first, so events keep their order.
   */
  private outbox: SessionEvent[] = [];
  private sending: Promise<void> | undefined;
  /** The linger before the next publish (`linger` > 0), while it runs. */
  private lingering: ReturnType<typeof setTimeout> | undefined;
  private readonly linger: number;
  private readonly writer: SessionWriter;
  private readonly messageId: string;
  private readonly tokenizer: Tokenizer;
  private readonly defer: boolean;

  constructor(
    writer: SessionWriter,
    messageId: string,
    tokenizer: Tokenizer,
    /** linger (deferred mode): ms the deltas wait before a publish (DELTA_LINGER_MS for the step). */
    opts: { defer?: boolean; linger?: number } = {},
  ) {
    this.writer = writer;
    this.messageId = messageId;
    this.tokenizer = tokenizer;
    this.defer = opts.defer === true;
    this.linger = this.defer ? (opts.linger ?? 0) : 0;
  }

  private base() {
    return { id: newId('prt'), sessionId: this.writer.ctx.sessionId, messageId: this.messageId, tokens: 0 };
  }

  async start(streamId: string, kind: 'text' | 'reasoning'): Promise<void> {
    const part: Streaming =
      kind === 'text'
        ? { ...this.base(), type: 'text', text: '' }
        : { ...this.base(), type: 'reasoning', text: '' };
    const entry: Entry = { part, persisted: false, dirty: true };
    this.open.set(streamId, entry);
    this.entries.push(entry);
    this.written.push(part.id);
    if (this.defer) {
      this.pendingEvents.push({ type: 'part.updated', part });
      return;
    }
    await this.drain();
    await this.writer.write(async (trx, emit) => {
      await insertPart(trx, this.writer.ctx.tenantId, part);
      emit({ type: 'part.updated', part });
    });
    entry.persisted = true;
    entry.dirty = false;
  }

  async delta(streamId: string, text: string): Promise<void> {
    const entry = this.open.get(streamId);
    if (!entry) return;
    const part = entry.part as Streaming;
    entry.part = { ...part, text: part.text + text };
    entry.dirty = true;
    this.streamed += text.length;
    const events = this.held.length > 0 ? [...this.held, ...this.pendingEvents] : this.pendingEvents;
    this.held = [];
    this.pendingEvents = [];
    events.push({
      type: 'part.delta',
      messageId: this.messageId,
      partId: part.id,
      field: part.type === 'text' ? 'text' : 'reasoning',
      delta: text,
    });
    this.outbox.push(...events);
    this.schedule();
    if (flushDue(Date.now() - this.lastFlush, this.streamed, this.flushed)) await this.flush();
  }

  /** Starts a publish of the outbox: now, or after the linger (none while one is in flight). */
  private schedule(): void {
    if (this.sending || this.lingering) return;
    if (this.linger <= 0) {
      this.sending = this.pump();
      return;
    }
    this.lingering = setTimeout(() => {
      this.lingering = undefined;
      if (this.outbox.length > 0) this.sending ??= this.pump();
    }, this.linger);
  }

  private async pump(): Promise<void> {
    while (this.outbox.length > 0) {
      const batch = this.outbox;
      this.outbox = [];
      await this.writer.publish(batch); // never throws: a lost event is logged (SessionWriter)
    }
    this.sending = undefined;
  }

  /** Waits until every delta so far is published (a linger is cut short). */
  async drain(): Promise<void> {
    if (this.lingering) {
      clearTimeout(this.lingering);
      this.lingering = undefined;
      if (this.outbox.length > 0) this.sending ??= this.pump();
    }
    while (this.sending) await this.sending;
  }

  /**
   * With a linger: waits for the publish in flight, and leaves the deltas not published yet to
   * `takeHeld`, which the caller's next write publishes after its own commit, in order.
   */
  private async quiesce(): Promise<void> {
    if (this.lingering) {
      clearTimeout(this.lingering);
      this.lingering = undefined;
    }
    while (this.sending) await this.sending;
  }

  async end(streamId: string): Promise<void> {
    const entry = this.open.get(streamId);
    if (!entry) return;
    this.open.delete(streamId);
    entry.dirty = true;
    if (this.defer) {
      entry.uncounted = true;
      return;
    }
    entry.part = countPart(entry.part as Streaming, this.tokenizer);
    const part = entry.part;
    await this.drain();
    await this.writer.write(async (trx, emit) => {
      await updatePart(trx, this.writer.ctx.tenantId, part);
      emit({ type: 'part.updated', part });
    });
    entry.dirty = false;
  }

  /** Holds committed events back for the stream's first publish or the caller's next write. */
  hold(events: SessionEvent[]): void {
    this.held.push(...events);
  }

  /**
   * The held events not published yet, then the deltas still lingering (the caller emits them
   * first in its next write). Called with no publish in flight (after endAll, drain or a flush).
   */
  takeHeld(): SessionEvent[] {
    const out = this.outbox.length > 0 && !this.sending ? [...this.held, ...this.outbox] : this.held;
    if (out !== this.held) this.outbox = [];
    this.held = [];
    return out;
  }

  /**
   * Ends every block still open (a stream that stopped without its end events); deltas published,
   * or, with a linger, left to the caller's next write (`takeHeld`).
   */
  async endAll(): Promise<void> {
    for (const id of [...this.open.keys()]) await this.end(id);
    if (this.linger > 0) await this.quiesce();
    else await this.drain();
  }

  /**
   * Deferred mode: counts the finished parts from the step's report where core allows it
   * (deriveOutputTokens, with the session's ratio before this step), else with the tokenizer.
   */
  settle(usage?: Usage, ratio?: Pick<RatioState, 'ratio' | 'weight'>): void {
    const waiting = this.entries.filter((e) => e.uncounted);
    if (waiting.length === 0) return;
    const parts = waiting.map((e) => e.part);
    const derived = ratio ? deriveOutputTokens(parts, usage, ratio) : undefined;
    waiting.forEach((entry, i) => {
      const share = derived?.[i];
      entry.part =
        share !== undefined
          ? withOutputTokens(entry.part, share, this.tokenizer)
          : countPart(entry.part, this.tokenizer);
      entry.uncounted = false;
      entry.dirty = true;
    });
    this.tools = this.entries.flatMap((e) => (e.part.type === 'tool' ? [e.part] : []));
  }

  /** Deferred mode: true when some part is not in PostgreSQL as it is now. */
  get unwritten(): boolean {
    return this.entries.some((e) => e.dirty);
  }

  /**
   * Deferred mode: writes every part not yet written as it is now, in the caller's transaction,
   * in stream order, and emits their part.updated events. Runnable tool calls go in as running.
   */
  async persist(trx: Trx, emit: (e: SessionEvent) => void, opts: PersistOptions = {}): Promise<void> {
    await this.write(trx, emit, this.collect(opts));
  }

  private async write(
    trx: Trx,
    emit: (e: SessionEvent) => void,
    { updates, inserts, emitted }: { updates: Part[]; inserts: Part[]; emitted: Part[] },
  ): Promise<void> {
    const tenantId = this.writer.ctx.tenantId;
    for (const part of updates) await updatePart(trx, tenantId, part);
    await insertParts(trx, tenantId, inserts);
    for (const part of emitted) emit({ type: 'part.updated', part });
  }

  /**
   * Deferred mode: the calls `running` picks become running (time.start = now) in memory only,
   * not written; the next persist or collect writes them as they are then.
   */
  markRunning(running: (call: ToolPart) => boolean): void {
    this.settle();
    const now = Date.now();
    for (const entry of this.entries) {
      const part = entry.part;
      if (part.type !== 'tool' || part.state.status !== 'pending' || !running(part)) continue;
      entry.part = { ...part, state: { status: 'running', input: part.state.input, time: { start: now } } };
      entry.dirty = true;
    }
    this.tools = this.entries.flatMap((e) => (e.part.type === 'tool' ? [e.part] : []));
  }

  /**
   * Deferred mode: persist's rows for a one-statement write (db fencedStatement), as `updates`
   * (flushed rows) and `inserts` (stream order, then `append`), with the events; marks them written.
   */
  collect(opts: PersistOptions = {}): { updates: Part[]; inserts: Part[]; emitted: Part[] } {
    this.settle();
    return this.take(opts);
  }

  // collect without counting: a flush during the stream writes finished parts uncounted (tokens
  // 0, which readers estimate), and settle marks them for an update with their counts.
  private take(opts: PersistOptions): { updates: Part[]; inserts: Part[]; emitted: Part[] } {
    const now = Date.now();
    // A flush writes every part started so far, so new rows all follow the flushed ones (which
    // are updated) and parts.seq keeps the stream's order.
    const inserts: Part[] = [];
    const updates: Part[] = [];
    const changed: Part[] = [];
    for (const entry of this.entries) {
      let part = entry.part;
      if (part.type === 'tool' && part.state.status === 'pending' && opts.running?.(part)) {
        part = { ...part, state: { status: 'running', input: part.state.input, time: { start: now } } };
        entry.part = part;
        entry.dirty = true;
      }
      if (!entry.dirty) continue;
      changed.push(part);
      if (entry.persisted) updates.push(part);
      else inserts.push(part);
      entry.persisted = true;
      entry.dirty = false;
    }
    const appended = opts.append ?? [];
    inserts.push(...appended);
    this.pendingEvents = [];
    this.tools = this.entries.flatMap((e) => (e.part.type === 'tool' ? [e.part] : []));
    return { updates, inserts, emitted: [...changed, ...appended] };
  }

  private async flush(): Promise<void> {
    this.lastFlush = Date.now();
    this.flushed = this.streamed;
    await this.drain();
    if (this.defer) {
      // Everything so far (in stream order, so a later insert cannot overtake an earlier part).
      if (!this.unwritten) return;
      await this.writer.write(async (trx, emit) => {
        for (const e of this.takeHeld()) emit(e);
        await this.write(trx, emit, this.take({}));
      });
      return;
    }
    const dirty = [...this.open.values()].filter((e) => e.dirty);
    if (dirty.length === 0) return;
    await this.writer.write(async (trx) => {
      for (const e of dirty) {
        await updatePart(trx, this.writer.ctx.tenantId, e.part);
        e.dirty = false;
      }
    });
  }

  async toolCall(
    callId: string,
    tool: string,
    input: Record<string, unknown>,
    invalid?: { raw: string; error: string },
  ): Promise<void> {
    const now = Date.now();
    const state: ToolPart['state'] = invalid
      ? { status: 'error', input, error: invalid.error, time: { start: now, end: now } }
      : { status: 'pending', input };
    const draft: ToolPart = { ...this.base(), type: 'tool', callId, tool, state };
    if (this.defer) {
      this.entries.push({ part: draft, persisted: false, dirty: true, uncounted: true });
      this.tools.push(draft);
      return;
    }
    const part = countPart(draft, this.tokenizer);
    const entry: Entry = { part, persisted: false, dirty: true };
    this.entries.push(entry);
    this.tools.push(part);
    await this.drain();
    await this.writer.write(async (trx, emit) => {
      await insertPart(trx, this.writer.ctx.tenantId, part);
      emit({ type: 'part.updated', part });
    });
    entry.persisted = true;
    entry.dirty = false;
  }
}
