import { test } from 'vitest';
import { redisUrl, testRedisPrefix } from './redis.ts';
import { createTestDatabase } from './template-db.ts';

// vitest fixtures: `pgTest` gives every test of a file one database cloned from the migrated
// template (dropped after the file); `redisTest` gives each test a unique key prefix.

// biome-ignore lint/correctness/noEmptyPattern: vitest requires a destructuring pattern (it reads dependencies from it)
export const pgTest = test.extend('pg', { scope: 'file' }, async ({}, { onCleanup }) => {
  const database = await createTestDatabase('pg-test');
  onCleanup(() => database.drop());
  return database;
});

export const redisTest = test.extend('redis', async () => ({
  url: redisUrl(),
  prefix: testRedisPrefix('redis-test'),
}));
