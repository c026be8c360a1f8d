-- Gives a user lock back. RELEASE_LOCK counts: a session that took a name twice holds it until its
-- second release (lockstock takes each name once per session and counts re-entry itself).
-- ? 1 server name
-- Returns one row: released = 1 (it was this session's), 0 (another session holds it), NULL (nobody).
SELECT RELEASE_LOCK(?) AS released;
