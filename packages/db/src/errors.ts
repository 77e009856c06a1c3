import { LooplineError } from '@loopline/core';

// Errors the data layer throws. StaleFenceError is a registry code (errors are data);
// NotFoundError marks a write aimed at a row that does not exist for this tenant.

/** A newer runner owns the session: the transaction was rolled back, nothing was written. */
export class StaleFenceError extends LooplineError {
  constructor(data: { sessionId: string; fence: number; currentFence: number | null }) {
    super('StaleFenceError', undefined, data);
  }
}

/** A write referred to a row that is absent (or belongs to another tenant). A bug, not a retry case. */
export class NotFoundError extends Error {
  readonly entity: string;
  readonly id: string;
  constructor(entity: string, id: string) {
    super(`${entity} ${id} not found`);
    this.name = 'NotFoundError';
    this.entity = entity;
    this.id = id;
  }
}
