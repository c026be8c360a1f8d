-- The draw's transaction settings: its sorts (a million 32-byte keys with their rows: ~190 MB, and the
-- entry hashes for the Merkle leaves) in memory instead of merged on disk, and no JIT compilation
-- (one statement of a fixed shape: compiling cost more than it saved). Local to the transaction.
-- Returns one row (ignored).
SELECT set_config('work_mem', '512MB', true), set_config('jit', 'off', true);
