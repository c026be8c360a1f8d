-- A rebuild raises the recovery fence before it reads the record (see 005_pipeline_leases.sql).
-- No parameters.
-- Returns fence (text).
SELECT nextval('recovery_fence')::text AS fence;
