// node-zookeeper-client's wire records (no types ship for them): only what containers.ts patches.
declare module 'node-zookeeper-client/lib/jute/index.js' {
  interface JuteRecord {
    deserialize(buffer: Buffer, offset: number): number;
    setChrootPath(path: string | undefined): void;
  }
  interface MultiHeader extends JuteRecord {
    type: number;
    done: boolean;
    err: number;
  }
  const jute: {
    OP_CODES: Record<'CREATE' | 'DELETE' | 'SET_DATA' | 'CHECK' | 'ERROR', number>;
    TransactionResponse: {
      prototype: {
        deserialize(
          this: { chrootPath: string | undefined; results: unknown[] },
          buffer: Buffer,
          offset: number,
        ): number;
      };
    };
    protocol: {
      MultiHeader: new () => MultiHeader;
      CreateResponse: new () => JuteRecord & { path: string };
      SetDataResponse: new () => JuteRecord & { stat: unknown };
      ErrorResponse: new () => JuteRecord & { err: number };
    };
    data: { Stat: new () => JuteRecord };
  };
  export default jute;
}
