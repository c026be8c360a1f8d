-- A buyer leaves a sale's waitlist, or declines the offer they hold (waitlist.ts): recorded before
-- Redis forgets them, so a rebuild never puts them back in line.
-- $1 sale id (bigint)
-- $2 user id
-- Returns nothing.
UPDATE sale_waitlist SET left_at = now() WHERE sale_id = $1 AND user_id = $2 AND left_at IS NULL;
