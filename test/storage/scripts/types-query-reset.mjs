// Run by postgres-driver.test.ts in a process of its own: see there.
import net from 'node:net';
import postgres from 'postgres';

// A proxy in front of the database that resets the first connection at the moment the driver
// sends its array-types query (fetch_types, the first statement of every new connection), and
// passes everything else through.
const target = new URL(process.env.DATABASE_URL);
let resets = 1;
const proxy = net.createServer((client) => {
  const server = net.connect(Number(target.port || 5432), target.hostname);
  server.on('error', () => {});
  client.on('error', () => {});
  client.on('data', (chunk) => {
    if (resets > 0 && chunk.includes('pg_catalog.pg_type')) {
      resets--;
      client.resetAndDestroy();
      server.destroy();
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
await sql.end({ timeout: 1 });
proxy.close();
