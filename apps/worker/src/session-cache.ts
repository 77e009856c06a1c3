import {
  type AnchorFacts,
  anchorFactsOf,
  compactionPartOf,
  extendAnchorFacts,
  extendLoopFacts,
  filterCompacted,
  hasReadableOutput,
  type LoopFacts,
  loopFacts,
  type Part,
  type RequestState,
  type WithParts,
} from '@loopline/core';
import {
  type Db,
  type HistoryChanges,
  type HistorySnapshot,
  historyChangesSince,
  loadHistorySnapshot,
} from '@loopline/db';
import type { PromptMemo } from '@loopline/llm';

// The per-worker session cache: a session's log since its boundary, its filterCompacted view and
// what a step derives from them, as of a history revision, so the session's next job here reads
// only the rows written since (one statement). A change the merge does not handle reloads. Bounded
// by entries and approximate bytes, LRU. Why a hit equals a fresh load: docs/durability.md §11.

export interface SessionCacheOptions {
  /** Sessions kept (0 = the cache is off). */
  maxEntries: number;
  /** Approximate bytes of all cached logs; an entry alone above it is not kept. */
  maxBytes: number;
}

export const defaultSessionCache: SessionCacheOptions = { maxEntries: 2_000, maxBytes: 64 * 1024 * 1024 };

/** Why a lookup missed (the reason label of the metric). */
export type MissReason = 'absent' | 'boundary' | 'changed' | 'oversize';

export interface CacheStats {
  hits: number;
  misses: Record<MissReason, number>;
  evictions: number;
  entries: number;
  bytes: number;
}

/**
 * Facts about `compacted` that would otherwise take a walk over the whole view on every step,
 * kept up to date as messages are appended (recomputed whenever the view is): what the estimate
 * reads besides the newest messages (core AnchorFacts), and what the step's request and decide() read.
 */
export interface ViewFacts extends AnchorFacts {
  /** hasReadableOutput(compacted). */
  readable: boolean;
  /** loopFacts(compacted): what decide() reads. */
  loop: LoopFacts;
}

/**
 * The last request's conversion state (core requestMessages, llm toProviderPrompt), so the next
 * step converts only new messages; both check their input, so a stale use converts afresh.
 */
export interface RequestMemo {
  /** The previous step's requestMessages state (spent once extended). */
  request?: RequestState;
  /** The previous call's provider messages (llm toProviderPrompt). */
  prompt?: PromptMemo;
}

/**
 * The log read ahead with the job's fence (db acquireFenceWithChanges / acquireFenceWithSnapshot):
 * the changes since revision `since`, valid for an entry still at that revision; or, when the
 * worker had no entry, the whole log from `fromSeq`, valid for a load of that range.
 */
export type PrefetchedChanges =
  | { since: number; changes: HistoryChanges }
  | { fromSeq: number | null; snapshot: HistorySnapshot };

export interface CachedHistory {
  history: WithParts[];
  /** filterCompacted(history). */
  compacted: WithParts[];
  facts: ViewFacts;
  /** loopFacts(history): what the step's session control reads from the log. */
  logFacts: LoopFacts;
  /** The entry's request memo (lives as long as the entry: a reload starts a new one). */
  memo: RequestMemo;
  hit: boolean;
}

interface Entry {
  tenantId: string;
  sessionId: string;
  /** The range loaded: seq ≥ fromSeq (null: everything). */
  fromSeq: number | null;
  rev: number;
  lastSeq: number;
  history: WithParts[];
  compacted: WithParts[];
  facts: ViewFacts;
  logFacts: LoopFacts;
  /** Position of each message in `history` (never reordered: a removal reloads). */
  index: Map<string, number>;
  /** Largest parts.seq per message. */
  partSeq: Map<string, number>;
  bytes: number;
  /** Approximate bytes of each message with its parts. */
  sizes: Map<string, number>;
  memo: RequestMemo;
}

/** Sessions' logs and views by session id, refreshed by revision (file header). */
export class SessionCache {
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;
  readonly stats: CacheStats = {
    hits: 0,
    misses: { absent: 0, boundary: 0, changed: 0, oversize: 0 },
    evictions: 0,
    entries: 0,
    bytes: 0,
  };
  /** Called on every lookup (metrics). */
  onLookup?: (result: 'hit' | 'miss', reason?: MissReason) => void;

  readonly opts: SessionCacheOptions;

  constructor(opts: SessionCacheOptions) {
    this.opts = opts;
  }

  get enabled(): boolean {
    return this.opts.maxEntries > 0;
  }

  /**
   * The session's live log from `fromSeq` and its view, as a fresh load would return them now
   * (cache plus changes, else loaded); undefined when the session is not this tenant's.
   */
  async history(
    deps: { db: Db },
    tenantId: string,
    sessionId: string,
    fromSeq: number | null,
    /** The log read by the job's fence statement (db acquireFenceWithChanges / …WithSnapshot). */
    prefetched?: PrefetchedChanges,
  ): Promise<CachedHistory | undefined> {
    // Taken out while it is refreshed: a concurrent job of the same session on this worker (a
    // superseded runner still finishing) loads on its own instead of merging into the same entry.
    const entry = this.take(sessionId);
    let reason: MissReason = 'absent';
    if (entry && entry.tenantId === tenantId) {
      if (entry.fromSeq !== fromSeq) reason = 'boundary';
      else {
        const changes =
          prefetched && 'since' in prefetched && prefetched.since === entry.rev
            ? prefetched.changes
            : await historyChangesSince(deps.db, tenantId, sessionId, entry.rev);
        if (!changes) return undefined;
        if (applyChanges(entry, changes)) {
          this.put(entry);
          this.count('hit');
          return {
            history: entry.history,
            compacted: entry.compacted,
            facts: entry.facts,
            logFacts: entry.logFacts,
            memo: entry.memo,
            hit: true,
          };
        }
        reason = 'changed';
      }
    }
    // The log read with this job's fence, when it is of this range: a load as of that fence.
    const snapshot =
      prefetched && 'snapshot' in prefetched && prefetched.fromSeq === fromSeq
        ? prefetched.snapshot
        : await loadHistorySnapshot(deps.db, tenantId, sessionId, fromSeq);
    if (!snapshot) return undefined;
    const fresh = entryOf(tenantId, sessionId, fromSeq, snapshot);
    if (!this.put(fresh) && reason === 'absent') reason = 'oversize';
    this.count('miss', reason);
    return {
      history: fresh.history,
      compacted: fresh.compacted,
      facts: fresh.facts,
      logFacts: fresh.logFacts,
      memo: fresh.memo,
      hit: false,
    };
  }

  /** The revision the session's entry was read at (what its next refresh continues from). */
  revOf(tenantId: string, sessionId: string): number | undefined {
    const entry = this.entries.get(sessionId);
    return entry?.tenantId === tenantId ? entry.rev : undefined;
  }

  /** Forgets a session (e.g. deleted). */
  delete(sessionId: string): void {
    this.take(sessionId);
  }

  private count(result: 'hit' | 'miss', reason?: MissReason): void {
    if (result === 'hit') this.stats.hits++;
    else this.stats.misses[reason ?? 'absent']++;
    this.onLookup?.(result, reason);
  }

  private take(sessionId: string): Entry | undefined {
    const entry = this.entries.get(sessionId);
    if (!entry) return undefined;
    this.entries.delete(sessionId);
    this.bytes -= entry.bytes;
    this.sync();
    return entry;
  }

  /** Keeps the entry as the most recently used one; false when it is too large to keep. */
  private put(entry: Entry): boolean {
    if (!this.enabled || entry.bytes > this.opts.maxBytes) return false;
    const current = this.entries.get(entry.sessionId);
    if (current) {
      // Two runners of one session on this worker: keep the newer revision.
      if (current.rev > entry.rev) return true;
      this.entries.delete(entry.sessionId);
      this.bytes -= current.bytes;
    }
    this.entries.set(entry.sessionId, entry);
    this.bytes += entry.bytes;
    while (this.entries.size > this.opts.maxEntries || this.bytes > this.opts.maxBytes) {
      const oldest = this.entries.keys().next().value as string;
      this.take(oldest);
      this.stats.evictions++;
    }
    this.sync();
    return true;
  }

  private sync(): void {
    this.stats.entries = this.entries.size;
    this.stats.bytes = this.bytes;
  }
}

function entryOf(tenantId: string, sessionId: string, fromSeq: number | null, s: HistorySnapshot): Entry {
  const index = new Map<string, number>();
  const sizes = new Map<string, number>();
  let bytes = 0;
  s.history.forEach((m, i) => {
    index.set(m.info.id, i);
    const size = messageBytes(m);
    sizes.set(m.info.id, size);
    bytes += size;
  });
  const compacted = filterCompacted(s.history);
  return {
    tenantId,
    sessionId,
    fromSeq,
    rev: s.rev,
    lastSeq: s.lastSeq,
    history: s.history,
    compacted,
    facts: factsOf(compacted),
    logFacts: loopFacts(s.history),
    index,
    partSeq: s.partSeq,
    bytes,
    sizes,
    memo: {},
  };
}

/**
 * Merges changes into the entry; false (reload) for anything but an update or append of the live
 * range. Never mutates what was handed out: a changed log or message is a new object.
 */
export function applyChanges(entry: Entry, changes: HistoryChanges): boolean {
  if (changes.messages.length === 0 && changes.parts.length === 0) {
    entry.lastSeq = changes.lastSeq;
    return true;
  }
  const history = entry.history.slice();
  const touched = new Map<number, WithParts>();
  const appended: WithParts[] = [];
  const newIndex = new Map<string, number>();
  for (const info of changes.messages) {
    const at = entry.index.get(info.id);
    if (at !== undefined) {
      // A revert hides messages: rare, reload rather than shift positions.
      if (info.reverted) return false;
      const old = touched.get(at) ?? history[at]!;
      if (old.info.seq !== info.seq) return false;
      touched.set(at, { info, parts: old.parts });
      continue;
    }
    if (info.reverted) continue; // not in the live log, never was in this range
    if (entry.fromSeq !== null && info.seq < entry.fromSeq) continue; // before the boundary
    // Unknown and in range: only a message written after the load (seq > lastSeq then) is new;
    // anything else is an older row coming back into the live log.
    if (info.seq <= entry.lastSeq) return false;
    const last = appended.at(-1) ?? history.at(-1);
    if (last && last.info.seq >= info.seq) return false;
    newIndex.set(info.id, history.length + appended.length);
    appended.push({ info, parts: [] });
  }
  const partSeq = new Map<string, number>();
  for (const { part, seq } of changes.parts) {
    const at = entry.index.get(part.messageId) ?? newIndex.get(part.messageId);
    if (at === undefined) continue; // a message outside the live range
    const message = at < history.length ? (touched.get(at) ?? history[at]!) : appended[at - history.length]!;
    const i = message.parts.findIndex((p) => p.id === part.id);
    let parts: Part[];
    if (i >= 0) {
      parts = message.parts.slice();
      parts[i] = part;
    } else {
      // parts.seq orders a message's parts: a new one must come after every part already held.
      const max = partSeq.get(part.messageId) ?? entry.partSeq.get(part.messageId) ?? 0;
      if (seq <= max) return false;
      partSeq.set(part.messageId, seq);
      parts = [...message.parts, part];
    }
    const updated = { info: message.info, parts };
    if (at < history.length) touched.set(at, updated);
    else appended[at - history.length] = updated;
  }
  // Commit: nothing above touched the entry.
  let bytes = entry.bytes;
  for (const [at, message] of touched) {
    history[at] = message;
    const size = messageBytes(message);
    bytes += size - (entry.sizes.get(message.info.id) ?? 0);
    entry.sizes.set(message.info.id, size);
  }
  for (const message of appended) {
    entry.index.set(message.info.id, history.length);
    history.push(message);
    const size = messageBytes(message);
    bytes += size;
    entry.sizes.set(message.info.id, size);
  }
  for (const [id, seq] of partSeq) entry.partSeq.set(id, seq);
  // Appending no compaction message or summary leaves the boundary, so the view just grows by
  // `appended`; an update of a held message recomputes it.
  if (touched.size === 0 && appended.every((m) => !isBoundaryMarker(m))) {
    entry.compacted = [...entry.compacted, ...appended];
    // The same holds for the facts: no summary was appended, so the anchor is the newest reply
    // with a report among the appended ones (all newer than any held), else the old one.
    const { readable, loop } = entry.facts;
    entry.facts = {
      ...extendAnchorFacts(entry.facts, appended),
      readable: readable || hasReadableOutput(appended),
      loop: extendLoopFacts(loop, appended),
    };
  } else {
    entry.compacted = filterCompacted(history);
    entry.facts = factsOf(entry.compacted);
  }
  // The log itself only grew when no held message changed, boundary markers or not.
  entry.logFacts = touched.size === 0 ? extendLoopFacts(entry.logFacts, appended) : loopFacts(history);
  entry.history = history;
  entry.rev = changes.rev;
  entry.lastSeq = changes.lastSeq;
  entry.bytes = bytes;
  return true;
}

/** The view's facts computed afresh (what a refresh extends). */
export function factsOf(compacted: WithParts[]): ViewFacts {
  return {
    ...anchorFactsOf(compacted),
    readable: hasReadableOutput(compacted),
    loop: loopFacts(compacted),
  };
}

function isBoundaryMarker(m: WithParts): boolean {
  return (m.info.role === 'assistant' && m.info.summary === true) || compactionPartOf(m) !== undefined;
}

// What the entry derives per message (loop facts, the request conversion, the provider-prompt memo)
// measured at about 0.6× the log's JSON size, i.e. some 0.3× this estimate (strings at 2 bytes).
const DERIVED_SHARE = 0.3;

/** Rough heap size of a message with its parts and what the entry derives from it. */
export function messageBytes(m: WithParts): number {
  const own = 64 + sizeOf(m.info, 0) + m.parts.reduce((sum, p) => sum + sizeOf(p, 0), 0);
  return Math.round(own * (1 + DERIVED_SHARE));
}

function sizeOf(value: unknown, depth: number): number {
  if (typeof value === 'string') return 16 + value.length * 2;
  if (value === null || typeof value !== 'object') return 8;
  if (depth > 8) return 64;
  let sum = 32;
  if (Array.isArray(value)) for (const v of value) sum += 8 + sizeOf(v, depth + 1);
  else for (const key in value) sum += 16 + sizeOf((value as Record<string, unknown>)[key], depth + 1);
  return sum;
}
