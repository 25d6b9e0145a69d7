const MAX_ID = 2n ** 63n - 1n;

/** Whether a path or query value can be one of our ids (a positive 64-bit integer); anything else finds nothing. */
export function isId(value: string | undefined): value is string {
  return value !== undefined && /^\d{1,19}$/.test(value) && BigInt(value) <= MAX_ID;
}
