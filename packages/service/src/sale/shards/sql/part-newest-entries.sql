-- The newest stream entries the record holds for one part of a split sale (recovery compares them with
-- the part's stream): newest-entries.sql on the part's rows. Orders of a part keep "<ms>-<seq>@<part>"
-- as their stream id, one suffix per part, so text order within a part is the order of newest-entries.sql;
-- the caller strips the suffix. Transfer steps count too: they are entries of the part's stream.
-- $1 sale id (bigint), $2 part (smallint)
-- Returns newest_ids (text[]: at most 1000 order entry ids, with their suffix), newest_move_id (text,
--   null: none), last_settled_ms (text, null: none).
SELECT ARRAY(SELECT stream_id
               FROM orders
              WHERE sale_id = $1 AND part = $2
              ORDER BY stream_id DESC
              LIMIT 1000) AS newest_ids,
       (SELECT stream_id
          FROM stock_moves
         WHERE sale_id = $1 AND part = $2
         ORDER BY split_part(stream_id, '-', 1)::bigint DESC, split_part(stream_id, '-', 2)::bigint DESC
         LIMIT 1) AS newest_move_id,
       (SELECT (extract(epoch FROM max(settled_at)) * 1000)::bigint::text
          FROM orders
         WHERE sale_id = $1 AND part = $2 AND settled_at IS NOT NULL) AS last_settled_ms;
