import type { FastifyInstance } from 'fastify';

/**
 * What the OpenAPI document says of each operation beyond its schema: a stable `operationId` (the
 * method name a generated client gives it) and its tag (the group a reference page shows it under).
 * One table, so a route added without an entry is caught (test/http/openapi.test.ts), and route
 * files stay about what a route does.
 */
export const OPERATIONS: Readonly<Record<string, { operationId: string; tag: Tag }>> = {
  'POST /api/sales': { operationId: 'createSale', tag: 'sales' },
  'GET /api/sales': { operationId: 'listSales', tag: 'sales' },
  'GET /api/sales/:id': { operationId: 'getSale', tag: 'sales' },
  'POST /api/sales/:id/room/challenges': { operationId: 'roomChallenge', tag: 'waiting room' },
  'POST /api/sales/:id/room/tickets': { operationId: 'joinRoom', tag: 'waiting room' },
  'POST /api/sales/:id/room/check': { operationId: 'checkRoom', tag: 'waiting room' },
  'GET /api/sales/:id/room': { operationId: 'getRoom', tag: 'waiting room' },
  'GET /.well-known/jwks.json': { operationId: 'admissionKeys', tag: 'waiting room' },
  'POST /api/sales/:id/room/pause': { operationId: 'pauseRoom', tag: 'waiting room' },
  'POST /api/sales/:id/room/resume': { operationId: 'resumeRoom', tag: 'waiting room' },
  'POST /api/sales/:id/waitlist': { operationId: 'joinWaitlist', tag: 'waitlist' },
  'GET /api/sales/:id/waitlist': { operationId: 'getWaitlistStanding', tag: 'waitlist' },
  'DELETE /api/sales/:id/waitlist': { operationId: 'leaveWaitlist', tag: 'waitlist' },
  'POST /api/sales/:id/waitlist/orders': { operationId: 'buyOffer', tag: 'waitlist' },
  'POST /api/sales/:id/raffle/entries': { operationId: 'enterRaffle', tag: 'raffle' },
  'GET /api/sales/:id/raffle': { operationId: 'getRaffle', tag: 'raffle' },
  'GET /api/sales/:id/raffle/entries': { operationId: 'publishedRaffle', tag: 'raffle' },
  'GET /api/sales/:id/raffle/entry': { operationId: 'getRaffleEntry', tag: 'raffle' },
  'POST /api/sales/:id/raffle/draw': { operationId: 'drawRaffle', tag: 'raffle' },
  'GET /.well-known/lockstock/raffle-key': { operationId: 'raffleSigningKey', tag: 'raffle' },
  'POST /api/sales/:id/orders': { operationId: 'buy', tag: 'orders' },
  'GET /api/orders/:id': { operationId: 'getOrder', tag: 'orders' },
  'POST /api/orders/:id/pay': { operationId: 'payOrder', tag: 'orders' },
  'POST /api/orders/:id/cancel': { operationId: 'cancelOrder', tag: 'orders' },
  'GET /healthz': { operationId: 'health', tag: 'operations' },
  'GET /metrics': { operationId: 'metrics', tag: 'operations' },
  'POST /api/reconcile': { operationId: 'reconcile', tag: 'operations' },
  'GET /': { operationId: 'dashboardPage', tag: 'dashboard' },
  'GET /api/dashboard': { operationId: 'dashboard', tag: 'dashboard' },
  'GET /api/live': { operationId: 'liveEvents', tag: 'dashboard' },
  'POST /api/demo/token': { operationId: 'demoToken', tag: 'dashboard' },
};

export type Tag = 'sales' | 'waiting room' | 'waitlist' | 'raffle' | 'orders' | 'operations' | 'dashboard';

/** The tags, described, in the order a reference page lists them. */
export const TAGS: ReadonlyArray<{ name: Tag; description: string }> = [
  { name: 'sales', description: 'Sales: stock, time window, per-user limit (created by an admin)' },
  {
    name: 'waiting room',
    description:
      'A first-come sale’s waiting room: a signed queue ticket, admission at a paced rate, then the purchase',
  },
  {
    name: 'waitlist',
    description:
      'A sold-out first-come sale’s waitlist: join, and a unit that comes back (cancelled, expired) is offered to the head of the line for a limited time',
  },
  {
    name: 'raffle',
    description:
      'A raffle sale: one entry per buyer until drawAt, signed entry receipts and a signed close, a draw anyone can verify from their receipt (seed committed, then revealed), winners and waitlist',
  },
  {
    name: 'orders',
    description: 'Buying, and an order’s life: reserved, confirmed, paid, cancelled, expired',
  },
  { name: 'operations', description: 'Health, metrics and reconciliation, for operators' },
  { name: 'dashboard', description: 'What the live dashboard reads' },
];

/**
 * Gives every documented route its operationId and tag as it is registered (before @fastify/swagger
 * reads the schemas). Routes hidden from the document (assets) are left alone.
 */
export function nameOperations(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const schema = (route.schema ??= {}) as { hide?: boolean; operationId?: string; tags?: string[] };
    if (schema.hide) return;
    for (const method of [route.method].flat()) {
      if (method === 'HEAD') continue;
      const known = OPERATIONS[`${method} ${route.url}`];
      if (!known) continue; // reported by the test: a documented route without a name
      schema.operationId ??= known.operationId;
      schema.tags ??= [known.tag];
    }
  });
}
