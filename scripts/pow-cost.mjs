#!/usr/bin/env node
// What the waiting room's proof of work costs a client (issue 39; README "Waiting room"): hashes per
// second of SHA-256 over a challenge-sized input, by WebCrypto (crypto.subtle.digest: what a web page
// has without extra code, one awaited digest per try) and by Node's native hash (what a bot on one
// core does), then the expected time per difficulty (2^bits hashes on average; a solve's time is
// geometric, so the 95th percentile is ~3× the mean). Prints a Markdown table.
// Usage: node scripts/pow-cost.mjs [seconds per measurement, default 2]
import { createHash, randomBytes, webcrypto } from 'node:crypto';
import { cpus, loadavg } from 'node:os';

const seconds = Number(process.argv[2] ?? 2);
// A challenge as the service issues it: ~150 characters of signed payload.
const challenge = randomBytes(110).toString('base64url');
const encoder = new TextEncoder();

async function rate(name, tryOnce) {
  let tries = 0;
  const until = performance.now() + seconds * 1000;
  while (performance.now() < until) {
    for (let i = 0; i < 256; i++) await tryOnce(tries++);
  }
  const perSecond = tries / seconds;
  console.error(`${name}: ${Math.round(perSecond).toLocaleString('en')} hashes/s`);
  return perSecond;
}

const webCrypto = await rate('WebCrypto (subtle.digest, awaited per try)', (i) =>
  webcrypto.subtle.digest('SHA-256', encoder.encode(`${challenge}:${i.toString(36)}`)),
);
const native = await rate('Node createHash (native, one core)', (i) => {
  createHash('sha256')
    .update(`${challenge}:${i.toString(36)}`)
    .digest();
});

const time = (s) =>
  s < 1 ? `${Math.round(s * 1000)} ms` : s < 120 ? `${s.toFixed(1)} s` : `${(s / 60).toFixed(1)} min`;
console.log(
  `Measured on ${cpus()[0]?.model ?? 'this machine'} (load average ${loadavg()[0].toFixed(1)}), Node ${process.version}:`,
);
console.log(
  `WebCrypto ${Math.round(webCrypto).toLocaleString('en')} hashes/s, native ${Math.round(native).toLocaleString('en')} hashes/s.\n`,
);
console.log(
  '| powBits | hashes (mean) | browser, WebCrypto: mean / 95th pct | bot, native, one core: mean | 1,000 places, bot on 8 cores |',
);
console.log('|---:|---:|---:|---:|---:|');
for (const bits of [8, 12, 14, 16, 18, 20, 22]) {
  const hashes = 2 ** bits;
  console.log(
    `| ${bits} | ${hashes.toLocaleString('en')} | ${time(hashes / webCrypto)} / ${time((3 * hashes) / webCrypto)} | ${time(hashes / native)} | ${time((1000 * hashes) / native / 8)} |`,
  );
}
