// Run by postgres-driver.test.ts in a process of its own: see there.
import postgres from 'postgres';

const url = process.env.DATABASE_URL;
const sql = postgres(url, { max: 1, onnotice() {} });
const admin = postgres(url, { max: 1, onnotice() {} });

// A cursor read one chunk at a time; its backend is terminated while the reader is between reads.
const rows = sql`SELECT g AS n, pg_backend_pid() AS pid FROM generate_series(1, 10000) g`.cursor(100);
const cursor = rows[Symbol.asyncIterator]();
const first = await cursor.next();
let read = first.value.length;
// Waits (up to 5 s) until the backend has exited.
await admin`SELECT pg_terminate_backend(${first.value[0].pid}, 5000)`;
try {
  for (;;) {
    const chunk = await cursor.next();
    if (chunk.done) break;
    read += chunk.value.length;
  }
  console.log(`ended after ${read} rows`);
} catch (error) {
  console.log(`rejected ${error.code} after ${read} rows`);
}
// A reader that leaves (a client gone) returns the cursor; long enough after for an unhandled
// rejection to have ended the process.
await cursor.return();
await new Promise((resolve) => setTimeout(resolve, 200));
console.log('returned');
await sql.end({ timeout: 1 });
await admin.end();
