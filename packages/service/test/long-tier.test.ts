import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..', '..');
/** Both packages' tests: the lock library's long rows import its own test/helpers/tier.ts. */
const testDirs = [join(import.meta.dirname), join(root, 'packages', 'lockstock', 'test')];

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? testFiles(join(dir, entry.name))
      : entry.name.endsWith('.test.ts')
        ? [join(dir, entry.name)]
        : [],
  );
}

describe('the long tier', () => {
  it('runs every file with long rows (npm run test:long), and only those', () => {
    const script = (
      JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
    ).scripts['test:long']!;
    const listed = script.split(/\s+/).filter((word) => word.endsWith('.test.ts'));
    const withLongRows = testDirs
      .flatMap(testFiles)
      .filter(
        (file) => /\blongTier\b/.test(readFileSync(file, 'utf8')) && !file.endsWith('long-tier.test.ts'),
      )
      .map((file) => relative(root, file))
      .sort();
    expect(withLongRows.length).toBeGreaterThan(0);
    expect([...listed].sort()).toEqual(withLongRows);
  });
});
