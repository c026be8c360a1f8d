#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { registerBench } from './bench.js';
import { registerDoctor } from './doctor.js';
import { registerLab } from './lab.js';
import { registerRaffle } from './raffle.js';
import { registerReconcile } from './reconcile.js';
import { registerServe } from './serve.js';
import { registerToken } from './token.js';
import { registerWorker } from './worker.js';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

const program = new Command('lockstock')
  .description('Distributed locks and flash-sale inventory that never oversell')
  .version(pkg.version)
  .showHelpAfterError();

registerServe(program);
registerWorker(program);
registerToken(program);
registerReconcile(program);
registerLab(program);
registerBench(program);
registerRaffle(program);
registerDoctor(program);

// Actions report their own errors and exit (lifecycle.ts); this catches what fails before one runs.
await program.parseAsync(process.argv).catch((error: unknown) => {
  process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
