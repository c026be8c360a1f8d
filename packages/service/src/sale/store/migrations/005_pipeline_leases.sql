-- Fencing the order pipelines during a rebuild (sale/recovery/fence.ts, pipeline/lease.ts).
--
-- A pipeline holds stream entries in memory between reading them and recording them (a batch being
-- committed and the one read ahead). If Redis comes back empty, those entries exist nowhere else, and
-- a rebuild that took its snapshot of the record before they were recorded would sell their units
-- again and forget their buyers and Idempotency-Keys. Anything kept in Redis is wiped with it, so the
-- rebuild and the pipelines meet here:
-- * `recovery_fence` is bumped by every rebuild before it reads the record (a sequence: the new value
--   is seen by every session at once, whatever transaction bumped it);
-- * each pipeline keeps a row: its lease (renewed while it makes progress) and the highest fence it
--   has drained — a step that began after it had seen that fence has ended, so nothing it read
--   before the fence is still in its memory unrecorded;
-- * a rebuild waits until every live pipeline has drained its fence; a pipeline whose lease lapsed
--   (or that kept the rebuild waiting too long) is fenced out instead: its row is deleted, or
--   `fenced_below` is raised, and the batch it still holds is refused when it tries to record it.

CREATE SEQUENCE recovery_fence;

CREATE TABLE pipeline_leases (
  consumer      text        PRIMARY KEY,   -- the pipeline's consumer name in the stream's group
  expires_at    timestamptz NOT NULL,
  -- the highest fence this pipeline has drained (0: none yet)
  drained_fence bigint      NOT NULL DEFAULT 0,
  -- batches from steps that began before this fence are refused (a rebuild gave up waiting for them)
  fenced_below  bigint      NOT NULL DEFAULT 0
);
