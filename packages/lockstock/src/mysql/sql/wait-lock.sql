-- Waits in the server's queue for a user lock (a blocking GET_LOCK on the owner's pinned session): no
-- polling; a holder that releases, or whose connection ends, hands the lock to the first waiter at
-- once (MariaDB and MySQL queue user locks in their metadata-lock queue, first come first served).
-- The wait is bounded (a slice) so a wait nobody cancels still ends; the client then waits again.
-- The comment /* lockstock:wait */ marks the statement in the process list (waiting-query.sql).
-- ? 1 server name, 2 timeout (seconds, fractions allowed)
-- Returns one row: granted = 1 (taken), 0 (the slice ran out), NULL (the wait was killed: KILL QUERY).
SELECT /* lockstock:wait */ GET_LOCK(?, ?) AS granted;
