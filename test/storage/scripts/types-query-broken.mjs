// Run by postgres-driver.test.ts in a process of its own: see there.
import net from 'node:net';
import postgres from 'postgres';

// A proxy in front of the database that breaks the first connection at the moment the driver
// sends its array-types query (fetch_types, the first statement of every new connection), and
// passes everything else through. `reset`: a TCP reset. `terminate`: what pg_terminate_backend
// sends then (a FATAL 57P01 ErrorResponse), and the connection closed.
const how = process.argv[2];
const terminated = (() => {
  const fields = Buffer.from(
    'SFATAL\0VFATAL\0C57P01\0Mterminating connection due to administrator command\0\0',
    'utf8',
  );
  const header = Buffer.alloc(5);
  header.write('E', 0);
  header.writeInt32BE(fields.length + 4, 1);
  return Buffer.concat([header, fields]);
})();
const target = new URL(process.env.DATABASE_URL);
let breaks = 1;
const proxy = net.createServer((client) => {
  const server = net.connect(Number(target.port || 5432), target.hostname);
  server.on('error', () => {});
  client.on('error', () => {});
  client.on('data', (chunk) => {
    if (breaks > 0 && chunk.includes('pg_catalog.pg_type')) {
      breaks--;
      server.destroy();
      if (how === 'reset') client.resetAndDestroy();
      else client.end(terminated);
      return;
    }
    server.write(chunk);
  });
  server.pipe(client);
  client.on('close', () => server.destroy());
});
await new Promise((resolve) => proxy.listen(0, '127.0.0.1', resolve));
const through = new URL(process.env.DATABASE_URL);
through.hostname = '127.0.0.1';
through.port = String(proxy.address().port);

const sql = postgres(through.href, { max: 1, onnotice() {} });
const settled = (promise) =>
  promise.then(
    () => 'answered',
    (error) => `rejected ${error.code}`,
  );
console.log(`first query ${await settled(sql`SELECT 1`)}`);
// Long enough for an unhandled rejection to have ended the process.
await new Promise((resolve) => setTimeout(resolve, 200));
console.log(`next query ${await settled(sql`SELECT 1`)}`);
// The array types were read on the connection that followed: an array parameter and column work.
const [{ doubled }] = await sql`SELECT array(SELECT x * 2 FROM unnest(${sql.array([1, 2])}::int4[]) x) AS doubled`;
console.log(`arrays ${JSON.stringify(doubled)}`);
await sql.end({ timeout: 1 });
proxy.close();
