import { existsSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { importsOf, sourceFiles } from './layers.js';

/**
 * The import circles among the TypeScript files under `srcUrl`, type-only imports and re-exports
 * included (a circle of types is still a tangle: none of its modules can be read, moved or tested
 * without the others). Each circle is one strongly connected component of the import graph, shown as
 * one closed path through it (`a.ts → b.ts → a.ts`) and all its files, paths relative to `srcUrl`.
 */
export function importCycles(srcUrl: URL): string[] {
  const src = fileURLToPath(srcUrl);
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(src)) {
    const targets = importsOf(file)
      .filter((specifier) => specifier.startsWith('.'))
      .map((specifier) => resolve(dirname(file), specifier).replace(/\.js$/, '.ts'))
      .filter((target) => existsSync(target));
    graph.set(file, [...new Set(targets)]);
  }
  const name = (file: string) => relative(src, file);
  return stronglyConnected(graph)
    .filter((component) => component.length > 1 || graph.get(component[0]!)!.includes(component[0]!))
    .map(
      (component) =>
        `${closedPath(graph, component).map(name).join(' → ')} (the circle's files: ${component.map(name).join(', ')})`,
    )
    .sort();
}

/** Tarjan's strongly connected components of `graph`. */
function stronglyConnected(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      components.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return components;
}

/** A shortest circle from the component's first file back to itself, within the component. */
function closedPath(graph: ReadonlyMap<string, readonly string[]>, component: readonly string[]): string[] {
  const start = component[0]!;
  const inside = new Set(component);
  const cameFrom = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift()!;
    for (const next of graph.get(node) ?? []) {
      if (!inside.has(next)) continue;
      if (next === start) {
        const path = [start];
        for (let at = node; at !== start; at = cameFrom.get(at)!) path.splice(1, 0, at);
        return [...path, start];
      }
      if (!cameFrom.has(next)) {
        cameFrom.set(next, node);
        queue.push(next);
      }
    }
  }
  return [start, start];
}
