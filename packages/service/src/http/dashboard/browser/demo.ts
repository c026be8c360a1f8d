import type { DemoToken, LiveSale } from '../schemas.js';
import { byId, isError, request } from './api.js';
import * as format from './format.js';

/**
 * "Try to buy": a fresh demo buyer (POST /api/demo/token, when the server allows it) buys from a
 * sale, and each answer is listed as the API gave it, to feel the limit and the sold-out answer.
 */
export function setUpDemo(): { sales(sales: LiveSale[]): void } {
  const newBuyer = byId<HTMLButtonElement>('demo-new');
  const user = byId('demo-user');
  const select = byId<HTMLSelectElement>('demo-sale');
  const quantity = byId<HTMLInputElement>('demo-qty');
  const buy = byId<HTMLButtonElement>('demo-buy-button');
  const log = byId<HTMLOListElement>('demo-log');
  let token = '';

  const note = (code: string, text: string) => {
    const item = document.createElement('li');
    item.dataset.code = code;
    const time = document.createElement('time');
    time.textContent = format.clock(Date.now());
    const body = document.createElement('span');
    body.textContent = text;
    item.append(time, body);
    log.prepend(item);
    while (log.children.length > 12) log.lastElementChild?.remove();
  };

  newBuyer.addEventListener('click', () => {
    void request<DemoToken>('POST', '/api/demo/token').then((answer) => {
      if (isError(answer.body)) {
        note(answer.body.error, `${answer.status} ${answer.body.error}: ${answer.body.message}`);
        return;
      }
      token = answer.body.token;
      user.textContent = answer.body.userId;
      buy.disabled = select.options.length === 0;
      note('buyer', `New demo buyer ${answer.body.userId}.`);
    });
  });

  byId<HTMLFormElement>('demo-buy').addEventListener('submit', (event) => {
    event.preventDefault();
    const saleId = select.value;
    void request<{ orderId: string; status: string }>('POST', `/api/sales/${saleId}/orders`, {
      token,
      body: { quantity: Number(quantity.value) },
    }).then((answer) => {
      if (isError(answer.body))
        note(answer.body.error, `${answer.status} ${answer.body.error}: ${answer.body.message}`);
      else note('reserved', `${answer.status} reserved: order ${answer.body.orderId} in sale #${saleId}.`);
    });
  });

  return {
    /** Keeps the sale list in step with the snapshots (the selection stays put). */
    sales(sales) {
      const selected = select.value;
      const ids = sales.map((s) => s.id).join(',');
      if (select.dataset.ids !== ids) {
        select.dataset.ids = ids;
        select.replaceChildren(
          ...sales.map((sale) => {
            const option = document.createElement('option');
            option.value = sale.id;
            option.textContent = `#${sale.id} ${sale.name}`;
            return option;
          }),
        );
        if (sales.some((s) => s.id === selected)) select.value = selected;
      }
      buy.disabled = !token || sales.length === 0;
    },
  };
}
