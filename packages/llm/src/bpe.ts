// Byte-pair encoding over tiktoken's published ranks, in plain JavaScript, counting only.
// Why not tiktoken's WASM engine: loading it costs a process about 45 MiB at rest and more once
// V8 tiers its code up (its linear memory never shrinks), the largest single share of a worker's
// RSS; these tables hold the same ranks in about 5 MiB. The counts are tiktoken's own: the same
// rank files, the same split pattern, the same merge rule (lowest rank first, leftmost on a tie),
// checked against the WASM engine over every recorded conversation and random text
// (test/bpe.test.ts).

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

/** The fields of a tiktoken rank file (`tiktoken/encoders/<name>.json`) that counting needs. */
interface RankFile {
  pat_str: string;
  bpe_ranks: string;
}

const EMPTY = 0;
const MISSING = 0x7fffffff;
/** Pieces longer than this are counted in chunks (BpeCounter.#longPiece). */
const PIECE_LIMIT = 512;
const PIECE_CHUNK = 256;
/** Pieces of at least this many UTF-8 bytes merge through a heap (BpeCounter.#heapMerge). */
const HEAP_MERGE_FROM = 16;
/** A heap key's base for starts and ends (above the longest piece's bytes, PIECE_LIMIT × 3). */
const SPAN = 2048;

/**
 * tiktoken's split pattern for JavaScript: Rust's `\s` is Unicode White_Space, JavaScript's also
 * matches U+FEFF, so both are spelled out; `(?i:…)` is native since V8 12.5.
 */
export function jsPattern(patStr: string): RegExp {
  return new RegExp(patStr.replaceAll('\\s', '\\p{White_Space}').replaceAll('\\S', '\\P{White_Space}'), 'gu');
}

/** Token byte strings, packed, with an open-addressing table from bytes to rank. */
class RankTable {
  readonly #bytes: Uint8Array;
  readonly #start: Uint32Array;
  readonly #slots: Int32Array;
  readonly #mask: number;
  /** The rank of every two-byte token by its bytes (b0 << 8 | b1): a merge's first pairs, unhashed. */
  readonly #twoBytes: Int32Array;

  /** `bytes[start[r], start[r + 1])` are the bytes of rank r. */
  constructor(bytes: Uint8Array, start: Uint32Array) {
    this.#bytes = bytes;
    this.#start = start;
    const count = start.length - 1;
    let size = 1;
    while (size < count * 2.5) size <<= 1;
    this.#slots = new Int32Array(size);
    this.#mask = size - 1;
    this.#twoBytes = new Int32Array(65_536).fill(MISSING);
    for (let rank = 0; rank < count; rank++) {
      if (start[rank + 1]! - start[rank]! === 2)
        this.#twoBytes[(bytes[start[rank]!]! << 8) | bytes[start[rank]! + 1]!] = rank;
      let slot = hash(bytes, start[rank]!, start[rank + 1]!) & this.#mask;
      while (this.#slots[slot] !== EMPTY) slot = (slot + 1) & this.#mask;
      this.#slots[slot] = rank + 1;
    }
  }

  /** The rank of `buf[from, to)`, or MISSING. */
  rank(buf: Uint8Array, from: number, to: number): number {
    const len = to - from;
    if (len === 2) return this.#twoBytes[(buf[from]! << 8) | buf[from + 1]!]!;
    let slot = hash(buf, from, to) & this.#mask;
    for (;;) {
      const entry = this.#slots[slot]!;
      if (entry === EMPTY) return MISSING;
      const rank = entry - 1;
      const start = this.#start[rank]!;
      if (this.#start[rank + 1]! - start === len && sameBytes(this.#bytes, start, buf, from, len))
        return rank;
      slot = (slot + 1) & this.#mask;
    }
  }
}

/** FNV-1a over a byte range. */
function hash(buf: Uint8Array, from: number, to: number): number {
  let h = 0x811c9dc5;
  for (let i = from; i < to; i++) h = Math.imul(h ^ buf[i]!, 0x01000193);
  return h >>> 0;
}

function sameBytes(a: Uint8Array, at: number, b: Uint8Array, bt: number, len: number): boolean {
  for (let i = 0; i < len; i++) if (a[at + i] !== b[bt + i]) return false;
  return true;
}

/** Writes the UTF-8 of `text` into `out` (large enough: 3 bytes per UTF-16 unit); its length. */
function utf8Into(text: string, out: Uint8Array): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    let c = text.charCodeAt(i);
    if (c < 0x80) out[n++] = c;
    else if (c < 0x800) {
      out[n++] = 0xc0 | (c >> 6);
      out[n++] = 0x80 | (c & 0x3f);
    } else {
      if (c >= 0xd800 && c <= 0xdfff) {
        const low = text.charCodeAt(i + 1);
        if (c <= 0xdbff && low >= 0xdc00 && low <= 0xdfff) {
          c = 0x10000 + ((c - 0xd800) << 10) + (low - 0xdc00);
          i++;
          out[n++] = 0xf0 | (c >> 18);
          out[n++] = 0x80 | ((c >> 12) & 0x3f);
          out[n++] = 0x80 | ((c >> 6) & 0x3f);
          out[n++] = 0x80 | (c & 0x3f);
          continue;
        }
        c = 0xfffd; // an unpaired surrogate: the replacement character, as TextEncoder writes it
      }
      out[n++] = 0xe0 | (c >> 12);
      out[n++] = 0x80 | ((c >> 6) & 0x3f);
      out[n++] = 0x80 | (c & 0x3f);
    }
  }
  return n;
}

/** Counts tokens of text split by an encoding's pattern, each piece merged by rank. */
export class BpeCounter {
  readonly #ranks: RankTable;
  readonly #pattern: RegExp;
  // Most pieces are common words seen before; bounded so one tenant's text cannot grow it.
  readonly #seen = new Map<string, number>();
  // A piece is at most PIECE_LIMIT UTF-16 units, each at most 3 UTF-8 bytes.
  readonly #buf = new Uint8Array(PIECE_LIMIT * 3);
  readonly #bounds = new Int32Array(PIECE_LIMIT * 3 + 1);
  readonly #pairRanks = new Int32Array(PIECE_LIMIT * 3 + 1);
  // The heap merge's state (#heapMerge): each part's neighbours by start byte, and the heap.
  readonly #next = new Int32Array(PIECE_LIMIT * 3 + 1);
  readonly #prev = new Int32Array(PIECE_LIMIT * 3 + 1);
  readonly #heap = new Float64Array(PIECE_LIMIT * 9 + 8);

  constructor(file: RankFile) {
    const { bytes, start } = decodeRanks(file.bpe_ranks);
    this.#ranks = new RankTable(bytes, start);
    this.#pattern = jsPattern(file.pat_str);
  }

  /** tiktoken's `encode_ordinary(text).length`: special tokens count as the text they are. */
  count(text: string): number {
    const pattern = this.#pattern;
    pattern.lastIndex = 0;
    let total = 0;
    for (let m = pattern.exec(text); m !== null; m = pattern.exec(text)) total += this.#piece(m[0]);
    return total;
  }

  #piece(piece: string): number {
    const known = this.#seen.get(piece);
    if (known !== undefined) return known;
    if (piece.length > PIECE_LIMIT) return this.#longPiece(piece);
    const len = utf8Into(piece, this.#buf);
    const n =
      this.#ranks.rank(this.#buf, 0, len) !== MISSING
        ? 1
        : len < HEAP_MERGE_FROM
          ? this.#merge(len)
          : this.#heapMerge(len);
    if (piece.length <= 24) {
      if (this.#seen.size >= 32_768) this.#seen.clear();
      this.#seen.set(piece, n);
    }
    return n;
  }

  /**
   * tiktoken's `byte_pair_merge`: start from single bytes, repeatedly join the adjacent pair whose
   * bytes have the lowest rank (the leftmost of equals), until no pair is a token. Returns the
   * number of parts left. `bounds` holds each part's start; `pairRanks[i]` the rank of parts i and
   * i+1 together.
   */
  #merge(len: number): number {
    const buf = this.#buf;
    const ranks = this.#ranks;
    const bounds = this.#bounds;
    const pair = this.#pairRanks;
    let parts = len;
    for (let i = 0; i <= len; i++) bounds[i] = i;
    for (let i = 0; i < len - 1; i++) pair[i] = ranks.rank(buf, i, i + 2);
    pair[len - 1] = MISSING;
    for (;;) {
      let min = MISSING;
      let at = -1;
      for (let i = 0; i < parts - 1; i++) {
        if (pair[i]! < min) {
          min = pair[i]!;
          at = i;
        }
      }
      if (at < 0) return parts;
      // Join parts `at` and `at + 1`: drop bound at+1, then re-rank the pairs around the join.
      bounds.copyWithin(at + 1, at + 2, parts + 1);
      pair.copyWithin(at + 1, at + 2, parts);
      parts--;
      pair[at] = at + 1 < parts ? ranks.rank(buf, bounds[at]!, bounds[at + 2]!) : MISSING;
      if (at > 0) pair[at - 1] = ranks.rank(buf, bounds[at - 1]!, bounds[at + 1]!);
    }
  }

  /**
   * The same merges as #merge, in the same order, for a long piece (a run of CJK characters is one
   * piece of the split pattern, up to PIECE_LIMIT characters): #merge scans every pair and shifts
   * the arrays at each join, the square of the piece's length; here the pairs wait in a binary heap
   * keyed by (rank, start byte), so the lowest rank pops first and the leftmost of equal ranks
   * before the others, and a join costs the log of the pairs. A pair whose parts changed since it
   * was pushed is stale: its span no longer matches the parts at its start, and it is skipped.
   * Parts are linked by start byte (`next`, `prev`; `next` is -1 once a part was joined to the one
   * before it). A heap key packs rank, start and end (each start and end < 2048, the rank < 2^31:
   * under 2^53, exact in a double).
   */
  #heapMerge(len: number): number {
    const buf = this.#buf;
    const ranks = this.#ranks;
    const next = this.#next;
    const prev = this.#prev;
    const heap = this.#heap;
    let size = 0;
    const push = (rank: number, start: number, end: number) => {
      const key = (rank * SPAN + start) * SPAN + end;
      let i = size++;
      while (i > 0) {
        const up = (i - 1) >> 1;
        if (heap[up]! <= key) break;
        heap[i] = heap[up]!;
        i = up;
      }
      heap[i] = key;
    };
    for (let i = 0; i < len; i++) {
      next[i] = i + 1;
      prev[i] = i - 1;
    }
    for (let i = 0; i < len - 1; i++) {
      const rank = ranks.rank(buf, i, i + 2);
      if (rank !== MISSING) push(rank, i, i + 2);
    }
    let parts = len;
    while (size > 0) {
      const key = heap[0]!;
      // Pop: the last key sifts down from the root.
      const last = heap[--size]!;
      let i = 0;
      for (;;) {
        let child = 2 * i + 1;
        if (child >= size) break;
        if (child + 1 < size && heap[child + 1]! < heap[child]!) child++;
        if (heap[child]! >= last) break;
        heap[i] = heap[child]!;
        i = child;
      }
      heap[i] = last;
      const end = key % SPAN;
      const start = Math.floor(key / SPAN) % SPAN;
      const right = next[start]!;
      // Stale: the part at `start` was joined to the one before it, is the last part, or the part
      // after it no longer ends at `end` (it was joined to its own next one).
      if (right < 0 || right >= len || next[right] !== end) continue;
      // Join `start` with `right`; the new part ends where `right` ended.
      next[start] = end;
      next[right] = -1;
      if (end < len) prev[end] = start;
      parts--;
      if (end < len) {
        const rank = ranks.rank(buf, start, next[end]!);
        if (rank !== MISSING) push(rank, start, next[end]!);
      }
      const before = prev[start]!;
      if (before >= 0) {
        const rank = ranks.rank(buf, before, end);
        if (rank !== MISSING) push(rank, before, end);
      }
    }
    return parts;
  }

  /**
   * A piece past PIECE_LIMIT characters counted in PIECE_CHUNK-character chunks: the merge costs the
   * square of a piece's length (200,000 spaces, one piece of the split pattern, took 44 s whole),
   * and real text has no such pieces; each cut changes the count by at most a token or so.
   * tokenizer.ts cuts runs of word characters before they get here; this bounds every other kind
   * (whitespace, punctuation) that a tenant's text can make as long as it likes.
   */
  #longPiece(piece: string): number {
    let total = 0;
    for (let i = 0; i < piece.length; ) {
      let end = Math.min(i + PIECE_CHUNK, piece.length);
      const code = piece.charCodeAt(end - 1);
      if (end < piece.length && code >= 0xd800 && code <= 0xdbff) end++; // never split a pair
      total += this.#piece(piece.slice(i, end));
      i = end;
    }
    return total;
  }
}

/**
 * A rank file's `bpe_ranks`, `<prefix> <first rank> <base64 token> …` with consecutive ranks, decoded
 * straight into one buffer (no object per token: the file has 200,000 of them).
 */
function decodeRanks(text: string): { bytes: Uint8Array; start: Uint32Array } {
  if (!/^\S+ 0 /.test(text)) throw new Error('rank file: expected ranks from 0 on one line');
  // Scanned word by word, not split: 200,000 strings alive at once would be kept in the old space.
  let from = text.indexOf(' ', text.indexOf(' ') + 1) + 1;
  const starts: number[] = [];
  const bytes = Buffer.alloc(text.length); // base64 is longer than what it encodes
  let at = 0;
  while (from < text.length) {
    let to = text.indexOf(' ', from);
    if (to < 0) to = text.length;
    starts.push(at);
    at += bytes.write(text.slice(from, to).trim(), at, 'base64');
    from = to + 1;
  }
  starts.push(at);
  return { bytes: new Uint8Array(bytes.subarray(0, at)), start: Uint32Array.from(starts) };
}

const require = createRequire(import.meta.url);

/** tiktoken's rank file of an encoding, from the `tiktoken` package. */
export function loadRankFile(name: string): RankFile {
  return JSON.parse(readFileSync(require.resolve(`tiktoken/encoders/${name}.json`), 'utf8')) as RankFile;
}
