import type { ReconcileReport } from '../schemas.js';
import { byId, claimsOf, isError, request } from './api.js';
import * as format from './format.js';

const STORAGE_KEY = 'lockstock.adminToken';

/**
 * The admin panel: an admin token (kept in this tab's sessionStorage only), creating a sale, and
 * reconciliation — "Check" only reports; "Repair" needs a second click and then sets Redis to what
 * the record allows.
 */
export function setUpAdmin(): void {
  const tokenInput = byId<HTMLInputElement>('admin-token');
  const who = byId('admin-who');
  let token = sessionStorage.getItem(STORAGE_KEY) ?? '';
  // `lockstock serve` prints a signed-in link on loopback: /#admin=<token>. A fragment never reaches
  // the server (nor its logs); it is taken into this tab's storage and removed from the address bar.
  const fromLink = new URLSearchParams(location.hash.slice(1)).get('admin');
  if (fromLink) {
    token = fromLink;
    sessionStorage.setItem(STORAGE_KEY, token);
    history.replaceState(null, '', `${location.pathname}${location.search}`);
  }

  const showWho = () => {
    const claims = token ? claimsOf(token) : undefined;
    who.classList.remove('warn');
    if (!token) who.textContent = 'No admin token yet: npx lockstock token --user you --admin';
    else if (!claims?.sub) {
      who.textContent = 'That does not look like a token.';
      who.classList.add('warn');
    } else {
      const expires = claims.exp ? `, expires in ${format.duration(claims.exp * 1000 - Date.now())}` : '';
      who.textContent = `Signed in as ${claims.sub}${claims.role === 'admin' ? ' (admin)' : ' — not an admin token'}${expires}`;
      who.classList.toggle('warn', claims.role !== 'admin');
    }
  };
  showWho();

  byId<HTMLFormElement>('admin-token-form').addEventListener('submit', (event) => {
    event.preventDefault();
    token = tokenInput.value.trim();
    tokenInput.value = '';
    if (token) sessionStorage.setItem(STORAGE_KEY, token);
    else sessionStorage.removeItem(STORAGE_KEY);
    showWho();
  });

  const createForm = byId<HTMLFormElement>('create-sale');
  const createResult = byId('create-result');
  createForm.addEventListener('submit', (event) => {
    event.preventDefault();
    const data = new FormData(createForm);
    const startsAt = new Date(Date.now() + Number(data.get('startsIn')) * 60_000);
    const endsAt = new Date(startsAt.getTime() + Number(data.get('duration')) * 60_000);
    void request<{ id: string; name: string }>('POST', '/api/sales', {
      token,
      body: {
        name: String(data.get('name')),
        stock: Number(data.get('stock')),
        perUserLimit: Number(data.get('perUserLimit')),
        startsAt: startsAt.toISOString(),
        endsAt: endsAt.toISOString(),
      },
    }).then((answer) => {
      if (isError(answer.body))
        show(createResult, 'error', `${answer.status} ${answer.body.error}: ${answer.body.message}`);
      else show(createResult, 'ok', `Created sale #${answer.body.id} “${answer.body.name}”.`, answer.body.id);
    });
  });

  const check = byId<HTMLButtonElement>('reconcile-check');
  const repair = byId<HTMLButtonElement>('reconcile-repair');
  const result = byId('reconcile-result');
  let armed = false;
  const reconcile = (withRepair: boolean) => {
    check.disabled = repair.disabled = true;
    void request<ReconcileReport>('POST', '/api/reconcile', { token, body: { repair: withRepair } }).then(
      (answer) => {
        check.disabled = repair.disabled = false;
        if (isError(answer.body)) {
          show(result, 'error', `${answer.status} ${answer.body.error}: ${answer.body.message}`);
          return;
        }
        renderDrift(answer.body);
        const drifting = answer.body.sales.filter((s) => s.drift !== 0 || s.buyersBelowRecord > 0).length;
        const summary = answer.body.repaired
          ? `Repaired: ${answer.body.sales.length} sales checked, ${drifting} had drift.`
          : drifting === 0
            ? `In sync: ${answer.body.sales.length} sales checked, no drift. Nothing was changed.`
            : `Drift in ${drifting} of ${answer.body.sales.length} sales. Nothing was changed.`;
        show(result, drifting === 0 || answer.body.repaired ? 'ok' : 'warn', summary);
      },
    );
  };
  check.addEventListener('click', () => {
    armed = false;
    repair.textContent = 'Repair…';
    reconcile(false);
  });
  repair.addEventListener('click', () => {
    if (!armed) {
      armed = true;
      repair.textContent = 'Click again to repair Redis';
      return;
    }
    armed = false;
    repair.textContent = 'Repair…';
    reconcile(true);
  });
}

function show(element: HTMLElement, kind: 'ok' | 'warn' | 'error', text: string, saleId?: string): void {
  element.dataset.kind = kind;
  element.textContent = text;
  if (saleId) element.dataset.saleId = saleId;
  else delete element.dataset.saleId;
}

function renderDrift(report: ReconcileReport): void {
  const table = byId<HTMLTableElement>('reconcile-table');
  const body = table.tBodies[0] as HTMLTableSectionElement;
  body.replaceChildren(
    ...report.sales.map((sale) => {
      const row = document.createElement('tr');
      row.dataset.sale = sale.saleId;
      row.classList.toggle('drift', sale.drift !== 0 || sale.buyersBelowRecord > 0);
      const cells = [
        `#${sale.saleId}`,
        sale.redisRemaining === null ? 'missing' : format.count(sale.redisRemaining),
        format.count(sale.recordedUnits),
        format.count(sale.inFlightUnits),
        String(sale.drift),
        format.count(sale.buyersBelowRecord),
        sale.repairedRemaining === undefined ? '' : format.count(sale.repairedRemaining),
      ];
      const names = ['sale', 'remaining', 'recorded', 'in-flight', 'drift', 'buyers-below', 'repaired'];
      cells.forEach((text, i) => {
        const cell = document.createElement('td');
        cell.dataset.field = names[i];
        cell.textContent = text;
        row.append(cell);
      });
      return row;
    }),
  );
  table.hidden = report.sales.length === 0;
}
