import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { saleBackEdges } from './helpers/sale-layers.js';

describe('inside sale/', () => {
  it('imports run down the layers of SALE_LAYERS only (no imports back up between its folders)', () => {
    expect(saleBackEdges(fileURLToPath(new URL('../src/sale', import.meta.url)))).toEqual([]);
  });
});
