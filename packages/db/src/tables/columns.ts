import { storableJsonText } from '@loopline/core';
import type { ColumnType, Generated } from 'kysely';

// Column helpers shared by the table interfaces. jsonb values are written as JSON text
// (node-postgres would turn a JS array into a PostgreSQL array literal) and read back as objects.

/** A jsonb column: reads T, writes JSON text (use `toJson`). */
export type Json<T> = ColumnType<T, string, string>;
/** A nullable jsonb column. */
export type NullableJson<T> = ColumnType<T | null, string | null | undefined, string | null>;
/** A jsonb column with a database default. */
export type JsonWithDefault<T> = ColumnType<T, string | undefined, string>;
/** A timestamptz column with a database default (now()). */
export type CreatedAt = Generated<Date>;
/** A nullable timestamptz column. */
export type NullableTimestamp = ColumnType<
  Date | null,
  Date | string | null | undefined,
  Date | string | null
>;

/** Omit that distributes over a union (keeps a discriminated union discriminated). */
export type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/**
 * JSON text for a jsonb column. A NUL or an unpaired surrogate that reached this far (upstream
 * text is made storable where it enters: core storable.ts) is written as U+FFFD instead of making
 * PostgreSQL refuse the write, which would fail again on every retry.
 */
export function toJson<T>(value: T): string {
  const text = JSON.stringify(value);
  if (text === undefined) throw new TypeError('value is not representable as JSON');
  return storableJsonText(text);
}

/** JSON text, or null for a nullable jsonb column. */
export function toJsonOrNull<T>(value: T | null | undefined): string | null {
  return value === null || value === undefined ? null : toJson(value);
}
