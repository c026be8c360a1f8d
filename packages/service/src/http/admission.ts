import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AdmissionCheck, PurchaseAdmission } from '../sale/admission/purchase.js';
import { ApiError } from './errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The admitted-at of the buyer's admission, for a sale with a waiting room (requireAdmission). */
    admittedAt?: number;
  }
}

/**
 * preHandler of the purchase and waitlist routes: whatever the sale's admission asks the buyer to
 * show (sale/admission/purchase.ts), before anything is reserved. A waiting room's sale sells only to
 * buyers with an admission signed for them (header `Admission`), so the room cannot be bypassed; the
 * reservation then checks it is valid now and spends it, on the Redis clock (one admission, one
 * order). A sale whose admission this process knows costs a Map lookup and no promise.
 */
export function requireAdmission(admission: PurchaseAdmission) {
  const settle = (request: FastifyRequest, checked: AdmissionCheck): ApiError | undefined => {
    if (!checked.ok) return new ApiError(checked.code, checked.message);
    if (checked.admittedAt !== undefined) request.admittedAt = checked.admittedAt;
    return undefined;
  };
  return (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) => {
    const { id } = request.params as { id: string };
    const header = request.headers.admission;
    const userId = (request.caller as NonNullable<FastifyRequest['caller']>).userId;
    const checked = admission.check(id, userId, typeof header === 'string' ? header : undefined);
    if (!(checked instanceof Promise)) {
      done(settle(request, checked));
      return;
    }
    checked.then(
      (found) => done(settle(request, found)),
      (error: Error) => done(error),
    );
  };
}
