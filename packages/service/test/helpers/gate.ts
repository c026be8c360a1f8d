/**
 * Holds whoever passes it until it is opened: for holding a pipeline's batch at a fault hook
 * (`faults.beforeCommit`) while a test arranges what happens meanwhile. `reached` resolves when the
 * first caller arrives; once open, callers pass straight through.
 */
export class Gate {
  private release!: () => void;
  private arrive!: () => void;
  private readonly opened = new Promise<void>((resolve) => (this.release = resolve));
  /** Resolves when the first caller is held. */
  readonly reached = new Promise<void>((resolve) => (this.arrive = resolve));
  /** How many callers have arrived (held or passed). */
  arrivals = 0;

  /** The hook: waits until the gate is open. */
  readonly pass = async (): Promise<void> => {
    this.arrivals++;
    this.arrive();
    await this.opened;
  };

  open(): void {
    this.release();
  }
}
