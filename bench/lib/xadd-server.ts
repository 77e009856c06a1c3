import Fastify from 'fastify';
import { redis } from './infra.ts';
import { serveParent } from './proc.ts';

// The gateway's ceiling: a Fastify route with the same path and JSON body that does one Redis
// XADD (to the session's event stream, as Loopline's publish does) and answers 202. No logger,
// no auth, no validation, no PostgreSQL. Forked by figures/gateway.ts; prints its port over IPC.

const ns = process.env.BENCH_NS ?? 'bench-xadd';
const client = redis();
const app = Fastify({ logger: false });
app.post<{ Params: { id: string }; Body: { text?: string } }>(
  '/v1/sessions/:id/messages',
  async (request, reply) => {
    const id = await client.xadd(
      `${ns}:{${request.params.id}}:events`,
      'MAXLEN',
      '~',
      10_000,
      '*',
      'e',
      JSON.stringify(request.body),
    );
    return reply.status(202).send({ id });
  },
);
await app.listen({ port: 0, host: '127.0.0.1' });
const address = app.server.address();
process.once('SIGTERM', () => {
  void app.close().then(() => {
    client.disconnect();
    process.exit(0);
  });
});
serveParent({ port: typeof address === 'object' && address ? address.port : 0 }, () => undefined);
