-- Which server answers: MariaDB's VERSION() says so ('10.11.19-MariaDB-…'); MySQL's does not. MariaDB
-- can kill one statement by its query id (cancel-query.sql), MySQL only a connection's current one.
-- Returns one row: version.
SELECT VERSION() AS version;
