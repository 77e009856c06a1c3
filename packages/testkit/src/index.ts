// @loopline/testkit — fixtures for integration tests against the real PostgreSQL and Redis:
// a database per test file cloned from a migrated template, unique Redis prefixes, factories.
// vitest fixtures (pgTest, redisTest) live in '@loopline/testkit/fixtures' so that importing
// this module never pulls in vitest.

export {
  DEFAULT_TEST_MODEL,
  makeAgent,
  makeSession,
  makeSessions,
  makeSessionWithTenant,
  makeStartedSteps,
  makeStepFinish,
  makeStepStart,
  makeTenant,
  makeTool,
  makeUsage,
} from './factories.ts';
export { lockWaiters } from './pg-waits.ts';
export { redisUrl, testRedisPrefix } from './redis.ts';
export {
  adminUrl,
  type CreateTestDatabaseOptions,
  createTestDatabase,
  databaseUrl,
  ensureTemplate,
  migrationsHash,
  type TestDatabase,
} from './template-db.ts';
export { sleep, until } from './wait.ts';
