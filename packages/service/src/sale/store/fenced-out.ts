/**
 * A batch was refused: a rebuild went ahead without waiting for the pipeline that holds it (its lease
 * lapsed, or it kept the rebuild waiting too long), and the rebuilt sale does not count its entries.
 * Recording it now would reject acknowledged orders as sold out or over the limit, or record a unit
 * twice; the pipeline drops it instead (entries Redis still has are delivered again).
 */
export class FencedOutError extends Error {
  override readonly name = 'FencedOutError';

  constructor(
    readonly consumer: string,
    readonly stepFence: number,
  ) {
    super(`pipeline ${consumer} was fenced out by a rebuild (its step began at fence ${stepFence})`);
  }
}
