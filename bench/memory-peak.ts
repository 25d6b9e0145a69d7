// `node bench/memory-peak.ts`: the server's resident memory under a many-accounts posting load, sampled every second.
// The server is started as `npm start` runs it (ROLE=all; BENCH_NODE_FLAGS adds node flags to try).
// Set-up registers 32 accounts through the API (each password hash takes 64 MB, argon2), and its high-water mark
// (VmHWM) is printed on its own; then VmHWM is started over and the 32 accounts post at once, one connection each, for
// BENCH_PEAK_SECONDS (20 s), followed by 10 s of quiet. Printed: the highest one-second VmRSS sample while posting
// and after, VmHWM over the same time, and the samples themselves.
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import { accountMaker, benchSettings, cleanUpBench, peakRssMb, resetPeakRss, rssMb, sampleRss, startServer, waitHealthy } from './common.ts';

const PORT = 3935;
const AUTHORS = 32;
const SECONDS = Number(process.env.BENCH_PEAK_SECONDS ?? 20);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const { env, config, base } = benchSettings(PORT);
  const server = startServer(env);
  const redis = new Redis(config.redisUrl);
  try {
    await waitHealthy(base);
    const pid = server.pid!;
    const atStart = rssMb(pid);
    const register = await accountMaker(base);
    const tokens: string[] = [];
    for (let i = 0; i < AUTHORS; i++) tokens.push(await register(`poster${i}`));
    const setUpPeak = peakRssMb(pid);
    const resettable = resetPeakRss(pid);
    const rss = sampleRss(pid);
    let next = 0;
    const result = await autocannon({
      url: `${base}/api/v1/statuses`, method: 'POST', connections: AUTHORS, duration: SECONDS,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ status: 'A post about the #fediverse, long enough to look like one: a sentence or two, with a link https://example.com/a/b and nothing else.' }),
      setupClient: (client) => client.setHeaders({ 'content-type': 'application/json', authorization: `Bearer ${tokens[next++ % tokens.length]}` }),
    });
    const posting = rss.samples.length;
    await sleep(10_000);
    const samples = rss.stop();
    console.log(`\nserver memory, ${AUTHORS} accounts posting at once for ${SECONDS} s (${Math.round(result['2xx'] / SECONDS)} posts/s accepted, ${result.non2xx + result.errors} refused or failed), node flags added: ${process.env.BENCH_NODE_FLAGS ?? 'none'}`);
    console.log(`  VmRSS after start-up ${atStart} MB; set-up (${AUTHORS} registrations, password hashing included) VmHWM ${setUpPeak} MB`);
    console.log(`  while posting: highest one-second VmRSS sample ${Math.max(...samples.slice(0, posting))} MB; 10 s after: ${samples.at(-1)} MB; VmHWM over both ${resettable ? `${peakRssMb(pid)} MB` : '(could not be reset)'}`);
    console.log(`  samples (MB, one a second): ${samples.join(' ')}\n`);
  } finally {
    await cleanUpBench(server, redis, config, env.DATA_DIR);
  }
}

await main();
