-- Tables of the lab's SQL strategies on MySQL/MariaDB (InnoDB), the same as schema.sql on PostgreSQL;
-- every run uses its own run_id, so runs never see each other. One statement per `;` at a line's end
-- (the lab sends them one by one: no multipleStatements on the connection). The other files here
-- number their parameters $1, $2… as the PostgreSQL ones do; the lab's loader turns them into `?`.
CREATE TABLE IF NOT EXISTS lab_stock (
  run_id  VARCHAR(100) NOT NULL PRIMARY KEY,
  stock   INT NOT NULL,            -- no CHECK: the lab must be able to show negative stock
  version INT NOT NULL DEFAULT 0
) ENGINE = InnoDB;
CREATE TABLE IF NOT EXISTS lab_orders (
  id     BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  run_id VARCHAR(100) NOT NULL,
  buyer  VARCHAR(100) NOT NULL,    -- no UNIQUE: the lab must be able to show duplicates
  KEY lab_orders_run (run_id)
) ENGINE = InnoDB;
-- The "insert lock" of seed 003: a row per held lock, unique by name.
CREATE TABLE IF NOT EXISTS lab_locks (
  name       VARCHAR(200) NOT NULL PRIMARY KEY,
  holder     VARCHAR(200) NOT NULL,
  created_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)
) ENGINE = InnoDB;
