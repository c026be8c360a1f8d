#!/usr/bin/env node
// `npm run sim -w lockstock -- [--seeds N] [--kind K[,K2]] [--seed S] [--first S] [--reorder]
// [--mutations] [--history] [--redis]`: the simulation's long run (test/sim/soak.sim.ts) under Vitest, which
// compiles the TypeScript; the options travel as SIM_* environment variables. --redis runs the real
// Redis adapter and its shipped Lua scripts (fengari, test/sim/redis/) instead of the simulated store.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const env = { ...process.env };
const flags = { '--seeds': 'SIM_SEEDS', '--kind': 'SIM_KIND', '--seed': 'SIM_SEED', '--first': 'SIM_FIRST' };
const switches = {
  '--reorder': 'SIM_REORDER',
  '--mutations': 'SIM_MUTATIONS',
  '--history': 'SIM_HISTORY',
  '--redis': 'SIM_REDIS',
};
for (let i = 0; i < args.length; i++) {
  const arg = args[i];
  if (arg in flags && args[i + 1] !== undefined) env[flags[arg]] = args[++i];
  else if (arg in switches) env[switches[arg]] = '1';
  else {
    console.error(`unknown option ${arg}; see the header of test/sim/cli.mjs`);
    process.exit(2);
  }
}
const root = fileURLToPath(new URL('../..', import.meta.url));
const run = spawnSync('npx', ['vitest', 'run', '--config', 'vitest.sim.config.ts'], {
  cwd: root,
  env,
  stdio: 'inherit',
});
process.exit(run.status ?? 1);
