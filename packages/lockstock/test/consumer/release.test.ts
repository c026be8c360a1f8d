import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

/**
 * Releasing is scripted (scripts/release-check.mjs, run by the release workflow with the pushed tag
 * before `npm publish --provenance`): the package holds what a user needs and nothing else, and a tag
 * that does not match the version and a dated CHANGELOG section is refused.
 */
const run = promisify(execFile);
const script = fileURLToPath(new URL('../../../../scripts/release-check.mjs', import.meta.url));
const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

async function check(...args: string[]): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [script, ...args], { timeout: 120_000 });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, output: e.stdout + e.stderr };
  }
}

describe('a release of lockstock', () => {
  it('packs dist, src, docs, README, CHANGELOG and LICENSE, no tests, every export and README link', async () => {
    const result = await check();
    expect(result, result.output).toMatchObject({ code: 0 });
    expect(result.output).toMatch(new RegExp(`lockstock ${version.replaceAll('.', '\\.')} — \\d+ files`));
  });

  it('is refused for a tag that is not the version, or while the CHANGELOG says unreleased', async () => {
    const wrong = await check('v0.0.1');
    expect(wrong.code).toBe(1);
    expect(wrong.output).toContain(`tag v0.0.1 does not name package.json's version ${version}`);
    const changelog = readFileSync(new URL('../../CHANGELOG.md', import.meta.url), 'utf8');
    const first = /^## (\S+)(?: \(([^)]*)\))?/m.exec(changelog);
    expect(first?.[1]).toBe(version); // the top section is the version package.json names
    const tagged = await check(`v${version}`);
    if (first?.[2] === 'unreleased') {
      expect(tagged.code).toBe(1);
      expect(tagged.output).toContain(`section is "(unreleased)": date it`);
    } else {
      expect(tagged.code).toBe(0);
    }
  });
});
