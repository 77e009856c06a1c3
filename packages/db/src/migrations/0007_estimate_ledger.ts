import type { Kysely } from 'kysely';

// The estimate made measurable: each step ledger row keeps the pre-call estimate of its prompt
// (best guess, bound, anchored or not, ratio, margin) beside the usage the provider reported;
// sessions keep the weight (tiktoken tokens of reports) their learned ratio rests on, so the first
// report sets the ratio and later ones are averaged in by size.

// biome-ignore lint/suspicious/noExplicitAny: migrations never depend on the current table types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('steps').addColumn('estimate', 'jsonb').execute();
  await db.schema.alterTable('sessions').addColumn('token_ratio_weight', 'double precision').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations never depend on the current table types
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('steps').dropColumn('estimate').execute();
  await db.schema.alterTable('sessions').dropColumn('token_ratio_weight').execute();
}
