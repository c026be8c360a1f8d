import { dirname, relative, resolve } from 'node:path';
import { importsOf, sourceFiles } from '../../../lockstock/test/helpers/layers.js';

/**
 * The direction imports run inside `src/sale/` (ARCHITECTURE.md, "Inside sale/"), lowest first.
 * A module imports its own group and those below it; groups of one rank are peers and import
 * neither. `base` is the files at the top of sale/ that the folders build on; `top` the files there
 * that assemble the domain from the folders (SaleService and what reads or checks a whole sale).
 */
export const SALE_LAYERS: ReadonlyArray<readonly string[]> = [
  ['base'],
  ['store'],
  ['context'],
  ['ids'],
  ['shards'],
  ['waitlist'],
  ['lifecycle'],
  ['pipeline'],
  ['room', 'raffle'],
  ['admission'],
  ['recovery'],
  ['top'],
];

/**
 * Imports SALE_LAYERS allows but the design does not: group → the groups below it that it must not
 * import. Recovery rebuilds stock and parts from the record and knows no admission strategy: what a
 * raffle or a waiting room keeps in Redis it puts back through admission/'s AdmissionRestore, so a
 * new strategy never touches recovery/ (issue 46).
 */
export const SALE_FORBIDDEN: Readonly<Record<string, readonly string[]>> = {
  recovery: ['raffle', 'room'],
};

/** The files at the top of sale/ that assemble the domain (every other file there is `base`). */
export const SALE_TOP_FILES = new Set([
  'activity',
  'gauges',
  'health',
  'new-sale',
  'reconcile',
  'reserve',
  'service',
  'stats',
]);

/** The group of a file under `saleDir`: its folder, or `base`/`top` for a file at the top. */
function groupOf(saleDir: string, file: string): string {
  const parts = relative(saleDir, file).split('/');
  if (parts.length > 1) return parts[0] as string;
  const name = (parts[0] as string).replace(/\.(ts|js)$/, '');
  return SALE_TOP_FILES.has(name) ? 'top' : 'base';
}

/** Every import inside sale/ that runs against SALE_LAYERS (type-only imports count too). */
export function saleBackEdges(saleDir: string): string[] {
  const rank = (group: string) => SALE_LAYERS.findIndex((layer) => layer.includes(group));
  const edges: string[] = [];
  for (const file of sourceFiles(saleDir)) {
    const from = groupOf(saleDir, file);
    if (rank(from) < 0) edges.push(`${relative(saleDir, file)}: ${from} is in no layer`);
    for (const specifier of importsOf(file).filter((s) => s.startsWith('.'))) {
      const target = resolve(dirname(file), specifier);
      if (relative(saleDir, target).startsWith('..')) continue; // the service's layers check those
      const to = groupOf(saleDir, target);
      if (to === from) continue;
      if (rank(to) >= rank(from)) {
        edges.push(`${relative(saleDir, file)} imports ${specifier} (${from} → ${to})`);
      }
    }
  }
  return edges;
}

/** Every import inside sale/ along an edge of SALE_FORBIDDEN (type-only imports count too). */
export function saleForbiddenEdges(saleDir: string): string[] {
  const edges: string[] = [];
  for (const file of sourceFiles(saleDir)) {
    const from = groupOf(saleDir, file);
    const forbidden = SALE_FORBIDDEN[from] ?? [];
    for (const specifier of importsOf(file).filter((s) => s.startsWith('.'))) {
      const target = resolve(dirname(file), specifier);
      if (relative(saleDir, target).startsWith('..')) continue;
      const to = groupOf(saleDir, target);
      if (forbidden.includes(to))
        edges.push(`${relative(saleDir, file)} imports ${specifier} (${from} → ${to})`);
    }
  }
  return edges;
}
