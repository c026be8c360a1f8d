-- An order pipeline stopped (everything it read is recorded or left pending): rebuilds stop asking.
-- $1 consumer
-- Returns nothing.
DELETE FROM pipeline_leases WHERE consumer = $1;
