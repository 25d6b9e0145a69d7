import pg from 'pg';

/** Whether PostgreSQL (or a pooler) at `connectionString` lets us in and answers `SELECT 1` within about 2 s. */
export async function pgAnswers(connectionString: string): Promise<boolean> {
  const client = new pg.Client({ connectionString, connectionTimeoutMillis: 2000, query_timeout: 2000 } as pg.ClientConfig);
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}
