-- Drops every user lock of this session before its connection goes back to the pool: a wait that was
-- killed or failed just after its grant may have left the lock taken (a session is pinned to one lock
-- of one owner, so nothing else is in it). MariaDB ≥ 10.0.2, MySQL ≥ 5.7.
-- Returns one row: released = how many holds were dropped.
SELECT RELEASE_ALL_LOCKS() AS released;
