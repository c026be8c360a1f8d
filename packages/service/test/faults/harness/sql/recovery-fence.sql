-- The recovery fence (store/migrations/005_pipeline_leases.sql): the last value a rebuild raised it
-- to, 0 before the first.
SELECT (CASE WHEN is_called THEN last_value ELSE 0 END)::text AS fence
FROM recovery_fence;
