// Run by postgres-driver.test.ts in a process of its own: see there.
import postgres from 'postgres';

const url = process.env.DATABASE_URL;
const sql = postgres(url, { max: 2, onnotice() {} });
const admin = postgres(url, { max: 1, onnotice() {} });
const settled = (promise) =>
  promise.then(
    () => 'answered',
    (error) => `rejected ${error.code}`,
  );
let statementSettled;
const inside = new Promise((resolve) => {
  statementSettled = resolve;
});
const transaction = settled(
  sql.begin(async (tx) => {
    const [{ pid }] = await tx`SELECT pg_backend_pid() AS pid`;
    await admin`SELECT pg_terminate_backend(${pid})`;
    await new Promise((resolve) => setTimeout(resolve, 200));
    // The transaction's code goes on after its connection closed, as a group commit's does.
    statementSettled(await settled(tx`SELECT 1`));
  }),
);
console.log(`transaction ${await transaction}`);
console.log(`statement ${await inside}`);
await sql`SELECT 1`;
console.log('pool answers');

// A backend terminated in the middle of a query answers it with an error (57P01) and closes; the
// connection's next life must not hand that error to its first query.
const alone = postgres(url, { max: 1, onnotice() {} });
const [{ pid: sleeper }] = await alone`SELECT pg_backend_pid() AS pid`;
const sleeping = settled(alone`SELECT pg_sleep(10)`);
await new Promise((resolve) => setTimeout(resolve, 200));
await admin`SELECT pg_terminate_backend(${sleeper})`;
console.log(`sleeping query ${await sleeping}`);
console.log(`next query ${await settled(alone`SELECT 1`)}`);
await alone.end({ timeout: 1 });
await admin.end();
await sql.end({ timeout: 1 });
