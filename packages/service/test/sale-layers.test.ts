import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { saleBackEdges, saleForbiddenEdges } from './helpers/sale-layers.js';

describe('inside sale/', () => {
  it('imports run down the layers of SALE_LAYERS only (no imports back up between its folders)', () => {
    expect(saleBackEdges(fileURLToPath(new URL('../src/sale', import.meta.url)))).toEqual([]);
  });

  it('recovery/ imports neither raffle/ nor room/ (it knows stock and parts, not admission strategies)', () => {
    expect(saleForbiddenEdges(fileURLToPath(new URL('../src/sale', import.meta.url)))).toEqual([]);
  });
});
