/**
 * An election's own rules: one leader at a time (terms never overlap, judged from when each candidate
 * won and when it resigned), leader() names the leader with its term's token, tokens grow from term
 * to term, and a leader's term ends with its session: a SIGKILLed leader in another OS process is
 * followed by a waiting candidate within its lease (or session timeout) and a margin.
 */
import type { LockClient, Term } from '../../locks/types.js';
import { lockName, type CaseMaker } from '../case-kit.js';
import { settlement } from '../check.js';
import { forkHolders } from '../processes.js';
import { demand, msFrom } from '../violation.js';

const CANDIDATES = 3;
/** The lease (or session timeout) of the leader the session case kills, ms. */
const LEASE_MS = 1_000;
/** How long past it a successor may take on a loaded machine, ms. */
const MARGIN_MS = 15_000;

interface TermRecord {
  candidate: string;
  token: number;
  wonAt: bigint;
  resignedAt?: bigint;
}

/** Adds the election's own cases. */
export function electionCases(maker: CaseMaker): void {
  const kind = {
    label: 'election',
    families: ['election'] as const,
    refuses: (client: LockClient) => client.election(lockName('election')),
  };

  maker.add(
    kind,
    `one leader at a time among ${CANDIDATES} candidates on other clients; leader() names it; tokens grow`,
    false,
    async (clients) => {
      const name = lockName('election');
      const origin = process.hrtime.bigint();
      const observer = (await clients.client()).election(name);
      const elections = await Promise.all(
        Array.from({ length: CANDIDATES }, async () => (await clients.client()).election(name)),
      );
      const terms: TermRecord[] = [];
      const misnamed: string[] = [];
      const lead = async (candidate: string, term: Term) => {
        const record: TermRecord = { candidate, token: term.fencingToken, wonAt: process.hrtime.bigint() };
        terms.push(record);
        const named = await observer.leader();
        if (named?.value !== candidate || named.fencingToken !== term.fencingToken)
          misnamed.push(
            `while ${candidate} led with token ${term.fencingToken}, leader() said ` +
              (named ? `${named.value} with token ${named.fencingToken}` : 'nobody'),
          );
        record.resignedAt = process.hrtime.bigint();
        await term.resign();
      };
      // Every candidate campaigns before any is awaited; each resigns once it has checked leader().
      const campaigns = elections.map((election, i) =>
        election.campaign(`candidate-${i}`).then((term) => lead(`candidate-${i}`, term)),
      );
      const ended = await Promise.all(campaigns.map((c) => settlement(c, 30_000)));
      const stuck = ended.flatMap((outcome, i) => (outcome === 'pending' ? [`candidate-${i}`] : []));
      demand(
        stuck.length === 0,
        'election',
        () => `candidates never led within 30 s of the last resign: ${stuck.join(', ')}`,
      );
      for (const outcome of ended) if (outcome instanceof Error) throw outcome;

      const describe = (t: TermRecord) =>
        `${t.candidate} (token ${t.token}) led from ${msFrom(origin, t.wonAt)} to ${msFrom(origin, t.resignedAt!)} ms`;
      const byWin = [...terms].sort((a, b) => (a.wonAt < b.wonAt ? -1 : 1));
      const overlap = byWin.findIndex((t, i) => i > 0 && t.wonAt < byWin[i - 1]!.resignedAt!);
      demand(
        overlap < 0,
        'election',
        () => `two leaders at once`,
        () => `${describe(byWin[overlap - 1]!)}; ${describe(byWin[overlap]!)}`,
      );
      const back = byWin.findIndex((t, i) => i > 0 && t.token <= byWin[i - 1]!.token);
      demand(
        back < 0,
        'election',
        () => `a later term's token is not greater`,
        () => `${describe(byWin[back - 1]!)}; then ${describe(byWin[back]!)}`,
      );
      demand(
        misnamed.length === 0,
        'election',
        () => `leader() did not name the leader`,
        () => misnamed.join('; '),
      );
      const after = await observer.leader();
      demand(
        after === undefined,
        'election',
        () => `leader() named ${after?.value} after every candidate resigned`,
      );
    },
  );

  maker.add(
    kind,
    'leadership ends with its session: a SIGKILLed leader is followed within its lease and a margin',
    !maker.backend.processes && 'an in-process backend has no leader in another OS process',
    async (clients, offered) => {
      const processes = maker.backend.processes!;
      const module = processes.module instanceof URL ? processes.module.href : processes.module;
      const name = lockName('election-session');
      const session = offered.leases === 'session';
      const config = processes.config(
        session ? { sessionTimeoutMs: LEASE_MS, watchdogTimeoutMs: 30_000 } : { watchdogTimeoutMs: LEASE_MS },
      );
      const mode = session ? 'session' : 'watchdog';
      const [leader] = forkHolders(module, config, {
        subject: 'election',
        name,
        mode,
        ms: LEASE_MS,
        holds: 1,
      });
      try {
        const { pid, tokens } = (await leader!.next('acquired')) as unknown as {
          pid: number;
          tokens: number[];
        };
        const election = (await clients.client()).election(name);
        const named = await election.leader();
        demand(
          named?.value === `leader-${pid}` && named.fencingToken === tokens[0],
          'election',
          () => `leader() did not name the leader in process ${pid}`,
          () =>
            `it won with token ${tokens[0]}; leader() said ${named ? `${named.value} (token ${named.fencingToken})` : 'nobody'}`,
        );
        const successor = election.campaign('successor', { waitMs: LEASE_MS + MARGIN_MS });
        leader!.kill('SIGKILL');
        await leader!.exited;
        const killedAt = performance.now();
        const term = await settlement(successor, LEASE_MS + MARGIN_MS + 5_000);
        demand(
          typeof term === 'object' && term !== null && 'fencingToken' in term,
          'election',
          () =>
            `a SIGKILLed leader's term did not end within its lease (${LEASE_MS} ms) plus ${MARGIN_MS} ms`,
          () =>
            `leader-${pid} (token ${tokens[0]}) killed; the waiting candidate got ${String(term)} after ${Math.round(performance.now() - killedAt)} ms`,
        );
        const won = term as Term;
        demand(
          won.fencingToken > tokens[0]!,
          'election',
          () => `the successor's token is not greater than the dead leader's`,
          () => `leader-${pid} had token ${tokens[0]}, successor got ${won.fencingToken}`,
        );
        await won.resign();
      } finally {
        leader!.kill('SIGKILL');
      }
    },
  );
}
