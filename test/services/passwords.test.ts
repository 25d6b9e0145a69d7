import { afterAll, describe, expect, it } from 'vitest';
import { hashPassword, setPasswordHashCost, verifyPassword } from '../../services/passwords.ts';

describe('password hashes', () => {
  afterAll(() => setPasswordHashCost({ memoryKib: 65_536, timeCost: 3 }));

  it('hash at the cost the settings give, and one made at another cost still verifies', async () => {
    setPasswordHashCost({ memoryKib: 65_536, timeCost: 3 });
    const strong = await hashPassword('correct horse');
    expect(strong).toMatch(/^\$argon2id\$v=19\$m=65536,p=\d+,t=3\$/);
    setPasswordHashCost({ memoryKib: 1024, timeCost: 1 });
    const cheap = await hashPassword('correct horse');
    expect(cheap).toMatch(/^\$argon2id\$v=19\$m=1024,p=\d+,t=1\$/);
    expect(await verifyPassword(strong, 'correct horse')).toBe(true);
    expect(await verifyPassword(strong, 'wrong horse')).toBe(false);
    expect(await verifyPassword(cheap, 'correct horse')).toBe(true);
    expect(await verifyPassword(null, 'correct horse')).toBe(false);
  });
});
