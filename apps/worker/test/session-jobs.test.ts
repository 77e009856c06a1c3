import { describe, expect, it } from 'vitest';
import { isUserAbort, SESSION_ABORT_REASON } from '../src/abort-reason.ts';
import { cancellationSignalOf, SessionJobs, trackSessionJob } from '../src/control/abort.ts';

// The per-process side of the abort broadcast: which step job runs for which session, and the
// cancellation signal withSessionLease combines with the lease's.

function fakeWorker() {
  const controllers = new Map<string, AbortController>();
  return {
    controllers,
    signalFor(jobId: string) {
      const c = new AbortController();
      controllers.set(jobId, c);
      return c.signal;
    },
    cancelJob(jobId: string, reason?: string) {
      controllers.get(jobId)?.abort(reason);
      return controllers.has(jobId);
    },
  };
}

describe('SessionJobs', () => {
  it('cancels the tracked step job of an aborted session, and only that one', () => {
    const jobs = new SessionJobs();
    const worker = fakeWorker();
    const a = { id: 'j1', data: { sessionId: 'ses_a' } };
    const b = { id: 'j2', data: { sessionId: 'ses_b' } };
    const untrackA = trackSessionJob(jobs, a, worker, worker.signalFor('j1'));
    trackSessionJob(jobs, b, worker, worker.signalFor('j2'));
    expect(cancellationSignalOf(a)).toBeDefined();

    expect(jobs.cancel(['ses_a', 'ses_unknown'])).toBe(1);
    const signal = cancellationSignalOf(a)!;
    expect(signal.aborted).toBe(true);
    expect(isUserAbort(signal)).toBe(true);
    expect(signal.reason).toBe(SESSION_ABORT_REASON);
    expect(cancellationSignalOf(b)!.aborted).toBe(false);

    // Combined with a lease signal, the reason tells an abort from a lost lease.
    const lease = new AbortController();
    expect(isUserAbort(AbortSignal.any([lease.signal, signal]))).toBe(true);
    const lost = new AbortController();
    lost.abort(new Error('session lock lost'));
    expect(isUserAbort(AbortSignal.any([lost.signal, cancellationSignalOf(b)!]))).toBe(false);

    untrackA?.();
    expect(cancellationSignalOf(a)).toBeUndefined();
    expect(jobs.cancel(['ses_a'])).toBe(0);
  });

  it('does not track a job without a session id, an id or a signal', () => {
    const jobs = new SessionJobs();
    const worker = fakeWorker();
    expect(trackSessionJob(jobs, { id: 'j', data: {} }, worker, worker.signalFor('j'))).toBeUndefined();
    expect(
      trackSessionJob(jobs, { data: { sessionId: 's' } }, worker, worker.signalFor('j')),
    ).toBeUndefined();
    expect(trackSessionJob(jobs, { id: 'j', data: { sessionId: 's' } }, worker, undefined)).toBeUndefined();
  });
});
