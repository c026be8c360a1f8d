/**
 * Child process of the HTTP benchmark: the baseline, a hello-world Fastify route taking the same POST
 * as a purchase (JSON body, bearer header), on the port given as the first argument.
 */
import Fastify from 'fastify';

const port = Number(process.argv[2]);
const app = Fastify();
app.post('/hello', async () => ({ hello: 'world' }));
app.get('/ready', async () => ({ ready: true }));
await app.listen({ port, host: '127.0.0.1' });
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void app.close());
