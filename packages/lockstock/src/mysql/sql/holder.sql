-- Who holds a user lock: the connection id of its holder, or NULL when it is free.
-- ? 1 server name
-- Returns one row: holder (connection id or NULL).
SELECT IS_USED_LOCK(?) AS holder;
