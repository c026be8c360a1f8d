import {
  isPeer,
  LIBRARIES,
  PEER_KIND,
  PRIMITIVES,
  runsOn,
  type Kind,
  type LibraryName,
} from './libraries.js';
import type { Instrumentation } from './instrumentation.js';
import { TOPOLOGIES, type Topology } from './targets.js';

/**
 * - `uncontended`: 64 async loops in one process, each on its own lock: acquire + release pairs/s.
 * - `contended`: 4 processes × 8 loops on one exclusive lock (mutex, fair lock), GET + 1 ms + SET
 *   (the counter always in a Redis: the same section whatever store holds the lock).
 * - `read-write`: 4 × 8 loops on one lock, one writing (GET + 1 ms + SET), 31 reading (GET + 1 ms +
 *   GET): reads/s and the writer's longest wait.
 * - `semaphore`: 4 × 8 loops on one semaphore of 4 permits, INCR + 1 ms + DECR.
 * - `instrumentation`: the uncontended mutex on one Redis, lockstock alone, once per instrumentation
 *   variant (instrumentation.ts): what the diagnostics channels and lockstock/otel cost a pair.
 */
export const SCENARIOS = ['uncontended', 'contended', 'read-write', 'semaphore', 'instrumentation'] as const;
export type Scenario = (typeof SCENARIOS)[number];

/** Which of lockstock's kinds each scenario measures, and where. */
export const COVERAGE: Record<Scenario, ReadonlyArray<{ kind: Kind; topology: Topology }>> = {
  uncontended: [
    { kind: 'mutex', topology: 'single' },
    { kind: 'fair', topology: 'single' },
    { kind: 'read-write', topology: 'single' }, // the read lock
    { kind: 'semaphore', topology: 'single' },
    { kind: 'redlock', topology: 'masters-5' },
    { kind: 'mutex', topology: 'cluster' },
    { kind: 'mutex', topology: 'etcd' },
    { kind: 'mutex', topology: 'zookeeper' },
    { kind: 'mutex', topology: 'postgres' },
    { kind: 'mutex', topology: 'mysql' },
  ],
  contended: [
    { kind: 'mutex', topology: 'single' },
    { kind: 'fair', topology: 'single' },
    { kind: 'mutex', topology: 'etcd' },
    { kind: 'mutex', topology: 'zookeeper' },
    { kind: 'mutex', topology: 'postgres' },
    { kind: 'mutex', topology: 'mysql' },
  ],
  'read-write': [{ kind: 'read-write', topology: 'single' }],
  semaphore: [{ kind: 'semaphore', topology: 'single' }],
  instrumentation: [{ kind: 'mutex', topology: 'single' }],
};

/** Stores whose floor waits for a taken lock without polling: etcd and ZooKeeper watch, SQL queues. */
const FLOOR_WAITS: readonly Topology[] = ['etcd', 'zookeeper', 'postgres', 'mysql'];

/** Permits of the semaphores, uncontended and contended, for lockstock and redis-semaphore alike. */
export const SEMAPHORE_PERMITS = 4;

/** One row of the report: a library's primitive in a scenario on a topology. */
export interface Subject {
  scenario: Scenario;
  topology: Topology;
  library: LibraryName;
  kind: Kind;
  /** The instrumentation scenario's rows: what is attached to lockstock's locks. */
  instrumentation?: Instrumentation;
}

/**
 * The rows to measure for the selected scenarios, lockstock kinds and libraries: each lockstock kind
 * where its scenario measures it, and beside it every selected peer's counterpart (PEER_KIND) on the
 * same topology — measured once when several kinds share it (peers' mutexes stand in for the mutex,
 * the fair lock and the read-write lock). Throws when the selection measures nothing, or names a
 * kind none of the selected scenarios measures. The instrumentation scenario has lockstock's rows
 * only, one per variant of `instrumentations` (the peers and the floor attach nothing).
 */
export function planSubjects(
  scenarios: readonly Scenario[],
  kinds: readonly Kind[],
  libraries: readonly LibraryName[],
  topologies: readonly Topology[] = TOPOLOGIES,
  instrumentations: readonly Instrumentation[] = ['none', 'holders', 'channels', 'otel'],
): Subject[] {
  for (const kind of kinds) {
    const where = SCENARIOS.filter((s) => COVERAGE[s].some((c) => c.kind === kind));
    if (!scenarios.some((s) => where.includes(s)))
      throw new Error(
        `kind ${kind} is measured in scenario ${where.join(', ')} only; add it to --scenarios or drop the kind`,
      );
  }
  const subjects: Subject[] = [];
  const add = (subject: Subject) => {
    const same = (s: Subject) =>
      s.scenario === subject.scenario &&
      s.topology === subject.topology &&
      s.library === subject.library &&
      s.kind === subject.kind &&
      s.instrumentation === subject.instrumentation;
    if (!subjects.some(same)) subjects.push(subject);
  };
  for (const scenario of SCENARIOS.filter((s) => scenarios.includes(s))) {
    const covered = COVERAGE[scenario].filter(
      (c) => kinds.includes(c.kind) && topologies.includes(c.topology),
    );
    for (const { kind, topology } of covered) {
      if (scenario === 'instrumentation') {
        if (libraries.includes('lockstock'))
          for (const instrumentation of instrumentations)
            add({ scenario, topology, library: 'lockstock', kind, instrumentation });
        continue;
      }
      if (libraries.includes('lockstock')) add({ scenario, topology, library: 'lockstock', kind });
      for (const library of LIBRARIES.filter((l) => isPeer(l) && libraries.includes(l))) {
        if (PRIMITIVES[library].includes(PEER_KIND[kind]) && runsOn(library, topology))
          add({ scenario, topology, library, kind: PEER_KIND[kind] });
      }
      // The floor is a pair of raw commands: measured where pairs are (uncontended), and under
      // contention where the store lets raw requests wait without polling (a watch, a lock queue).
      const floorHere =
        scenario === 'uncontended' || (scenario === 'contended' && FLOOR_WAITS.includes(topology));
      if (floorHere && libraries.includes('floor'))
        add({
          scenario,
          topology,
          library: 'floor',
          kind: PEER_KIND[kind] === 'redlock' ? 'redlock' : 'mutex',
        });
    }
  }
  if (subjects.length === 0)
    throw new Error(
      `nothing to measure: libraries ${libraries.join(', ')} have none of kinds ${kinds.join(', ')}`,
    );
  return subjects;
}
