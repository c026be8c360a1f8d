/** One planned step of a long job; `weight` is its expected share of the time (e.g. planned ms). */
export interface PlannedStep {
  readonly label: string;
  readonly weight: number;
}

/**
 * How a long job (a lab, a benchmark) says where it is: the plan up front, then each step of it, in
 * order, as it starts and finishes. The CLI draws it (cli/progress.ts): a bar with an ETA on a
 * terminal, a line per step otherwise.
 */
export interface StepProgress {
  begin(steps: readonly PlannedStep[]): void;
  /** The next step of the plan has started. */
  start(): void;
  /** How much of the current step is done, 0..1, for steps that can tell. */
  advance(fraction: number): void;
  /** The current step finished; `result` is a line worth keeping (printed above the bar). */
  finish(result?: string): void;
  /** The job is over (done or failed): the bar goes away. */
  end(): void;
}

/** Reports nothing (library callers and tests that do not watch). */
export const silentProgress: StepProgress = {
  begin: () => undefined,
  start: () => undefined,
  advance: () => undefined,
  finish: () => undefined,
  end: () => undefined,
};
