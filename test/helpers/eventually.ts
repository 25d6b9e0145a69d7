/** Polls until `check` returns the wanted value (for effects that travel through Redis pub/sub or a job), then returns the last value. */
export async function eventually<T>(check: () => Promise<T>, wanted: T, timeoutMs = 2000): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last = await check();
  while (last !== wanted && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 20));
    last = await check();
  }
  return last;
}
