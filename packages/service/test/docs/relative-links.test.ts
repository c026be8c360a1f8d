import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * No user-facing file points at a file that is not there: the relative links of the READMEs, the
 * architecture, the changelogs and docs/, and every `NAME.md` they (or the CLI's help, the lab's
 * report and the benchmarks' output) name. Cheap: reads files, starts nothing.
 */
const repo = fileURLToPath(new URL('../../../../', import.meta.url));
const service = fileURLToPath(new URL('../../', import.meta.url));

/** Tracked and not-yet-tracked files (not ignored), relative to the repository. */
const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], {
  cwd: repo,
  encoding: 'utf8',
})
  .split('\n')
  .filter((f) => f !== '' && existsSync(join(repo, f)));

const docs = files.filter(
  (f) =>
    /^(README|ARCHITECTURE|CHANGELOG)\.md$/.test(f) ||
    /^docs\/[^/]+\.md$/.test(f) ||
    /^packages\/[^/]+\/(README|CHANGELOG)\.md$/.test(f) ||
    /^packages\/[^/]+\/docs\/[^/]+\.md$/.test(f),
);
const sources = files.filter((f) => /^packages\/service\/src\/(cli|lab|bench)\/.*\.ts$/.test(f));
const markdownNames = new Set(files.filter((f) => f.endsWith('.md')).map((f) => basename(f)));

/** Relative link targets of a Markdown file: [text](target) and href/src attributes, with their anchor. */
function relativeLinks(text: string): Array<{ target: string; anchor: string | undefined; line: number }> {
  const found: Array<{ target: string; anchor: string | undefined; line: number }> = [];
  let fenced = false;
  text.split('\n').forEach((content, i) => {
    if (content.startsWith('```')) fenced = !fenced;
    if (fenced) return;
    for (const m of content.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)|(?:href|src)="([^"]+)"/g)) {
      const target = (m[1] ?? m[2]) as string;
      if (/^([a-z][a-z0-9+.-]*:|\/\/)/i.test(target)) continue; // a URL
      const [path = '', anchor] = target.split('#');
      found.push({ target: decodeURIComponent(path), anchor, line: i + 1 });
    }
  });
  return found;
}

/** The anchors GitHub (and TypeDoc's site) give a Markdown file's headings. */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const found = new Set<string>();
  let fenced = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6} (.+)$/.exec(line);
    if (!heading) continue;
    const slug = (heading[1] as string)
      .toLowerCase()
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/[^\p{L}\p{N}\- _]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    found.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return found;
}

describe('user-facing files reference no missing file', () => {
  it('finds the files it checks', () => {
    expect(docs).toEqual(expect.arrayContaining(['README.md', 'ARCHITECTURE.md', 'CHANGELOG.md']));
    expect(sources).toEqual(expect.arrayContaining(['packages/service/src/lab/html.ts']));
    expect(existsSync(join(service, 'package.json'))).toBe(true);
  });

  it('every relative link of the READMEs, ARCHITECTURE, changelogs and docs/ resolves', () => {
    const missing: string[] = [];
    let checked = 0;
    for (const doc of docs) {
      for (const { target, line } of relativeLinks(readFileSync(join(repo, doc), 'utf8'))) {
        if (target === '') continue;
        checked++;
        if (!existsSync(join(repo, dirname(doc), target))) missing.push(`${doc}:${line} → ${target}`);
      }
    }
    expect(missing).toEqual([]);
    expect(checked).toBeGreaterThan(10); // the READMEs link to each other and to docs/
  });

  it('every anchor they link to is a heading of the page (on GitHub and on the docs site)', () => {
    const missing: string[] = [];
    let checked = 0;
    for (const doc of docs) {
      for (const { target, anchor, line } of relativeLinks(readFileSync(join(repo, doc), 'utf8'))) {
        if (anchor === undefined || anchor === '') continue;
        const page = target === '' ? doc : join(dirname(doc), target);
        if (!page.endsWith('.md') || !existsSync(join(repo, page))) continue;
        checked++;
        if (!anchors(readFileSync(join(repo, page), 'utf8')).has(anchor)) {
          missing.push(`${doc}:${line} → ${target}#${anchor}`);
        }
      }
    }
    expect(missing).toEqual([]);
    expect(checked).toBeGreaterThan(10); // the pages of docs/ link to each other's sections
  });

  it('every NAME.md they, the CLI, the lab and the benchmarks mention exists in the repository', () => {
    const missing: string[] = [];
    for (const file of [...docs, ...sources]) {
      readFileSync(join(repo, file), 'utf8')
        .split('\n')
        .forEach((content, i) => {
          for (const m of content.matchAll(/\b([\w.-]+\.md)\b/g)) {
            if (!markdownNames.has(m[1] as string)) missing.push(`${file}:${i + 1} → ${m[1]}`);
          }
        });
    }
    expect(missing).toEqual([]);
  });
});
