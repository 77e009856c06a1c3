// The session rows of a batch statement (the group commits' step starts and finishes), locked
// before anything is written and in session-id order, so two batches, or a batch and the gateway's
// appends (which lock in the same order), never wait on each other in a cycle. For a statement with
// an `input` CTE (`session_id`, `tenant_id`); its fence checks select `s.id in (select id from locked)`.

/** The `locked` CTE's body. */
export const BATCH_SESSIONS_LOCK = `select s.id from sessions s
    join input i on s.id = i.session_id and s.tenant_id = i.tenant_id
    order by s.id
    for update of s`;
