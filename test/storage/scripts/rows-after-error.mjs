// Run by postgres-driver.test.ts in a process of its own: see there.
import postgres from 'postgres';

// A statement that fails after 49 of its rows have arrived (division by zero at the 50th), then
// the next statement on the same connection.
const sql = postgres(process.env.DATABASE_URL, { max: 1, onnotice() {} });
try {
  await sql`SELECT CASE WHEN g < 50 THEN g ELSE 1 / (g - g) END AS n FROM generate_series(1, 100) g`;
  console.log('first query answered');
} catch (error) {
  console.log(`first query rejected ${error.code}`);
}
const rows = await sql`SELECT 1 AS x`;
console.log(`next query ${JSON.stringify([...rows])}`);
await sql.end({ timeout: 1 });
