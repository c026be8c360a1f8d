// Checks that a release of the lockstock package is what its tag says, before anything is published:
//   node scripts/release-check.mjs [tag]      (tag: v<version>; without one, only the layout is checked)
// - the tag names the version in packages/lockstock/package.json;
// - CHANGELOG.md's first section is that version, dated — "## 0.4.0 (2026-12-01)", not "(unreleased)";
// - `npm pack` holds what a user needs (dist, src, docs, README, CHANGELOG, LICENSE) and no tests, and
//   every `exports` target and every file the README links to is in it; no test server launchers
//   (they are the workspace package @lockstock/servers).
// Prints one line per problem; exits 1 if there is any. The release workflow runs it with the tag,
// the test suite without one.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const pkgDir = join(root, 'packages', 'lockstock');
const pkg = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
const tag = process.argv[2];
const problems = [];

if (tag !== undefined && tag !== `v${pkg.version}`) {
  problems.push(`tag ${tag} does not name package.json's version ${pkg.version} (expected v${pkg.version})`);
}

const changelog = readFileSync(join(pkgDir, 'CHANGELOG.md'), 'utf8');
const first = /^## (\S+)(?: \(([^)]*)\))?\s*$/m.exec(changelog);
if (!first) problems.push('CHANGELOG.md has no "## <version>" section');
else {
  if (first[1] !== pkg.version) {
    problems.push(`CHANGELOG.md's first section is ${first[1]}, package.json says ${pkg.version}`);
  }
  if (tag !== undefined && !/^\d{4}-\d{2}-\d{2}$/.test(first[2] ?? '')) {
    problems.push(
      `CHANGELOG.md's ${first[1]} section is "(${first[2] ?? ''})": date it (YYYY-MM-DD) to release`,
    );
  }
}

const [packed] = JSON.parse(
  execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: pkgDir, encoding: 'utf8' }),
);
const files = new Set(packed.files.map((f) => f.path));
const tops = [...new Set([...files].map((path) => path.split('/')[0]))].sort();
const expected = ['CHANGELOG.md', 'LICENSE', 'README.md', 'dist', 'docs', 'package.json', 'src'];
if (tops.join() !== expected.join())
  problems.push(`npm pack holds ${tops.join(', ')}; expected ${expected.join(', ')}`);
for (const path of files) {
  if (/(^|\/)test\/|\.test\.[cm]?[jt]s$/.test(path)) problems.push(`npm pack holds a test: ${path}`);
  // Test launchers live in the workspace package @lockstock/servers, never in the lock library.
  if (/^(dist|src)\/servers\//.test(path)) problems.push(`npm pack holds a test server launcher: ${path}`);
}
if (pkg.exports?.['./servers'] !== undefined)
  problems.push('exports has ./servers: the test launchers are @lockstock/servers, not shipped');
for (const field of ['dependencies', 'peerDependencies', 'optionalDependencies']) {
  if (pkg[field]?.['@lockstock/servers'] !== undefined)
    problems.push(`${field} names @lockstock/servers, a private workspace package (devDependencies only)`);
}
/** The files an `exports` map points at (its leaf values; its keys are subpaths). */
const leaves = (value) =>
  typeof value === 'string' ? [value] : Object.values(value ?? {}).flatMap((v) => leaves(v));
for (const target of leaves(pkg.exports).map((t) => normalize(t))) {
  if (target !== 'package.json' && !files.has(target))
    problems.push(`exports names ${target}, not in npm pack`);
}
const readme = readFileSync(join(pkgDir, 'README.md'), 'utf8');
for (const [, link] of readme.matchAll(/\]\((?!https?:|#)([^)#\s]+)/g)) {
  if (!files.has(normalize(link))) problems.push(`README.md links to ${link}, not in npm pack`);
}

for (const problem of problems) process.stderr.write(`release check: ${problem}\n`);
if (problems.length > 0) process.exit(1);
process.stdout.write(
  `release check: lockstock ${pkg.version}${tag ? ` (${tag})` : ''} — ${files.size} files, ${packed.unpackedSize} bytes unpacked\n`,
);
