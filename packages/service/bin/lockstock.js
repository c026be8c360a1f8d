#!/usr/bin/env node
// The `lockstock` command. This file is checked in (it is not the build's output) so that `npm ci`
// links it: npm links a workspace's bin before `prepare` builds dist/, and skips a bin whose file is
// missing — `npx lockstock` then found the library package of the same name, which has no bin.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const main = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(main)) {
  const root = fileURLToPath(new URL('../../..', import.meta.url));
  process.stderr.write(
    `lockstock: the CLI is not built yet (${fileURLToPath(main)} is missing): run \`npm run build\` in ${root}\n`,
  );
  process.exit(1);
}
await import(main.href);
