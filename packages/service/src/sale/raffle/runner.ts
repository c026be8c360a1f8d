import { setTimeout as delay } from 'node:timers/promises';
import { silentLogger, type Logger } from '../logger.js';
import type { Database } from '../store/db.js';
import { BeaconError } from './draw.js';
import { raffleQueries } from './keys.js';
import type { RaffleService } from './raffles.js';

export interface RaffleRunnerOptions {
  /** Pause between rounds, ms. @default 250 */
  intervalMs?: number;
  logger?: Logger;
  /** Whether this process may serve a sale now (the recovery gate). @default every sale */
  admits?: (saleId: string) => boolean;
}

/**
 * The raffles' background work, in every `serve` process (any number may run; each step is safe to
 * race): records the entries of raffles taking them, draws the raffles whose entry window is over
 * (once: draw.ts), and serves the drawn ones' units left to the draw order (the winners, then the
 * waitlist as units come back) until their sale ends. A round that fails (Redis or the database
 * away) is logged and tried again next round.
 */
export class RaffleRunner {
  private running = false;
  private loop: Promise<void> | undefined;
  private readonly intervalMs: number;
  private readonly logger: Logger;
  private readonly warned = new Set<string>();

  constructor(
    private readonly raffles: RaffleService,
    private readonly db: Database,
    private readonly options: RaffleRunnerOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? 250;
    this.logger = options.logger ?? silentLogger;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }

  /** One round over every raffle with work left (exported for tests: no timer). */
  async round(): Promise<void> {
    const { rows } = await this.db.query<{ sale_id: string; phase: string; due: boolean }>(
      raffleQueries.activeRaffles,
    );
    for (const raffle of rows) {
      if (!this.running && this.loop) return;
      if (this.options.admits && !this.options.admits(raffle.sale_id)) continue;
      if (raffle.phase === 'entries' || raffle.phase === 'closed') {
        if (raffle.phase === 'entries') await this.raffles.recordEntries(raffle.sale_id);
        if (raffle.due || raffle.phase === 'closed') {
          let outcome;
          try {
            outcome = await this.raffles.draw(raffle.sale_id);
          } catch (error) {
            // One raffle's beacon (a relay down, or lying) holds back its own draw, not the others'.
            if (!(error instanceof BeaconError)) throw error;
            this.logger.error({ saleId: raffle.sale_id, err: error }, 'raffle not drawn: its beacon round');
            continue;
          }
          if (outcome.result === 'drawn') {
            this.logger.info(
              { saleId: raffle.sale_id, entries: outcome.entries, ms: outcome.ms },
              'raffle drawn',
            );
          } else if (outcome.reason === 'no_beacon_source' && !this.warned.has(raffle.sale_id)) {
            this.warned.add(raffle.sale_id); // once per raffle, not every 250 ms
            this.logger.warn(
              { saleId: raffle.sale_id, round: outcome.round },
              outcome.message ?? outcome.reason,
            );
          }
        }
      } else {
        await this.raffles.serve(raffle.sale_id);
      }
    }
  }

  private async run(): Promise<void> {
    while (this.running) {
      try {
        await this.round();
      } catch (error) {
        this.logger.warn({ err: error }, 'raffle round failed; trying again');
      }
      if (this.running) await delay(this.intervalMs);
    }
  }
}
