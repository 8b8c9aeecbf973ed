import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import type { Env } from '../../src/config/env-settings.js';
import { ConfigError } from '../../src/errors.js';
import { cliEnv, runCli } from '../helpers/cli.js';

const NOW = () => new Date('2026-03-10T12:00:00.000Z');
const SOURCE: Env = { INSIGHTS_API_URL: 'https://api.example.com', INSIGHTS_API_KEY: 'key-123' };
const TOKEN = 'CANARY-0123456789abcdefghijklmn';

function load(env: Env, file?: unknown) {
  return loadConfig({
    env,
    now: NOW,
    readFile: () => {
      if (file === undefined) throw new Error('ENOENT');
      return JSON.stringify(file);
    },
  });
}

function problems(env: Env, file?: unknown): ConfigError {
  try {
    load(env, file);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('webhook settings', () => {
  it('defaults: port 8080 on 0.0.0.0, a 256 KiB body limit, no proxy, 4 days to confirm (beyond the 3-day lookback), no endpoint', () => {
    const config = load(SOURCE);
    expect(config).toMatchObject({
      webhookPort: 8080,
      webhookHost: '0.0.0.0',
      webhookBodyLimit: 262_144,
      trustedProxy: [],
      webhookConfirmDays: 4,
    });
    expect(config.sources[0]?.webhookToken).toBeUndefined();
  });

  it('reads the single source token, its allow-list and the receiver settings', () => {
    const config = load({
      ...SOURCE,
      INSIGHTS_WEBHOOK_TOKEN: TOKEN,
      INSIGHTS_WEBHOOK_ALLOWED_IPS: '10.0.0.0/8, 2001:db8::/32,192.0.2.7',
      INSIGHTS_WEBHOOK_PORT: '0',
      INSIGHTS_WEBHOOK_HOST: '127.0.0.1',
      INSIGHTS_WEBHOOK_BODY_LIMIT: '65536',
      INSIGHTS_TRUSTED_PROXY: '127.0.0.1,::1',
      INSIGHTS_WEBHOOK_CONFIRM_DAYS: '5',
    });
    expect(config.sources[0]).toMatchObject({
      webhookToken: TOKEN,
      allowedIps: ['10.0.0.0/8', '2001:db8::/32', '192.0.2.7'],
    });
    expect(config).toMatchObject({
      webhookPort: 0,
      webhookHost: '127.0.0.1',
      webhookBodyLimit: 65_536,
      trustedProxy: ['127.0.0.1', '::1'],
      webhookConfirmDays: 5,
    });
  });

  it('refuses a short or non-URL-safe token, naming the variable and never the value', () => {
    for (const token of ['CANARY-short', `CANARY-${'x'.repeat(30)}/slash`, `CANARY ${'x'.repeat(30)}`]) {
      const error = problems({ ...SOURCE, INSIGHTS_WEBHOOK_TOKEN: token });
      expect(error.problems.map((p) => p.variable)).toEqual(['INSIGHTS_WEBHOOK_TOKEN']);
      expect(error.message).toContain('24-256 URL-safe characters');
      expect(error.message).not.toContain('CANARY');
    }
  });

  it('refuses bad CIDRs, ports, hosts, limits and day counts, all at once', () => {
    const error = problems({
      ...SOURCE,
      INSIGHTS_WEBHOOK_ALLOWED_IPS: '10.0.0.0/33',
      INSIGHTS_TRUSTED_PROXY: 'proxy.internal',
      INSIGHTS_WEBHOOK_PORT: '70000',
      INSIGHTS_WEBHOOK_HOST: 'a b',
      INSIGHTS_WEBHOOK_BODY_LIMIT: '10',
      INSIGHTS_WEBHOOK_CONFIRM_DAYS: '-1',
    });
    expect(error.problems.map((p) => p.variable).sort()).toEqual([
      'INSIGHTS_TRUSTED_PROXY',
      'INSIGHTS_WEBHOOK_ALLOWED_IPS',
      'INSIGHTS_WEBHOOK_BODY_LIMIT',
      'INSIGHTS_WEBHOOK_CONFIRM_DAYS',
      'INSIGHTS_WEBHOOK_HOST',
      'INSIGHTS_WEBHOOK_PORT',
    ]);
  });

  it('INSIGHTS_CONFIG: webhook_token, webhook_token_env and allowed_ips per source', () => {
    const file = {
      sources: [
        {
          name: 'shop',
          base_url: 'https://api.example.com',
          api_key: 'k1',
          webhook_token_env: 'SHOP_HOOK',
          allowed_ips: ['203.0.113.0/24'],
        },
        { name: 'blog', base_url: 'https://api.example.com', api_key: 'k2', webhook_token: `${TOKEN}-blog` },
        { name: 'docs', base_url: 'https://api.example.com', api_key: 'k3' },
      ],
    };
    const config = load({ INSIGHTS_CONFIG: 'sources.json', SHOP_HOOK: `${TOKEN}-shop` }, file);
    expect(config.sources.map((s) => [s.name, s.webhookToken, s.allowedIps])).toEqual([
      ['shop', `${TOKEN}-shop`, ['203.0.113.0/24']],
      ['blog', `${TOKEN}-blog`, undefined],
      ['docs', undefined, undefined],
    ]);
  });

  it('INSIGHTS_CONFIG: an unset token variable, a bad token or CIDR, and the single-source variables are reported', () => {
    const file = {
      sources: [
        { name: 'shop', base_url: 'https://api.example.com', api_key: 'k1', webhook_token_env: 'SHOP_HOOK' },
        { name: 'blog', base_url: 'https://api.example.com', api_key: 'k2', webhook_token: 'CANARY-short' },
        { name: 'docs', base_url: 'https://api.example.com', api_key: 'k3', allowed_ips: ['not-an-ip'] },
      ],
    };
    const error = problems({ INSIGHTS_CONFIG: 'sources.json', INSIGHTS_WEBHOOK_TOKEN: TOKEN }, file);
    expect(error.problems.map((p) => p.variable)).toEqual([
      'INSIGHTS_WEBHOOK_TOKEN',
      'INSIGHTS_CONFIG sources[2].allowed_ips[0]',
    ]);
    const second = problems({ INSIGHTS_CONFIG: 'sources.json' }, { sources: file.sources.slice(0, 2) });
    expect(second.problems.map((p) => p.variable)).toEqual([
      'SHOP_HOOK',
      'INSIGHTS_CONFIG sources[1].webhook_token',
    ]);
    expect(second.message).not.toContain('CANARY');
  });
});

describe('INSIGHTS_TRUSTED_PROXY: no broader than /8 (IPv4) or /32 (IPv6)', () => {
  it('refuses a range that would believe anyone’s X-Forwarded-For, naming the variable once', () => {
    for (const value of [
      '0.0.0.0/0',
      '::/0',
      '0.0.0.0/1,128.0.0.0/1',
      '10.0.0.0/7',
      '127.0.0.1,0.0.0.0/1',
      '2001::/31',
      '::ffff:0:0/96',
      '0:0:0:0:0:ffff:0.0.0.0/100',
    ]) {
      const error = problems({ ...SOURCE, INSIGHTS_TRUSTED_PROXY: value });
      expect(
        error.problems.map((p) => p.variable),
        value,
      ).toEqual(['INSIGHTS_TRUSTED_PROXY']);
      expect(error.message).toContain('none broader than /8 (IPv4) or /32 (IPv6)');
      expect(error.message).not.toContain(value);
    }
  });

  it('accepts addresses and ranges up to the limit, as written', () => {
    const value = '10.0.0.0/8, 192.168.0.0/16,127.0.0.1,::1,2001:db8::/32,::ffff:10.0.0.0/104';
    expect(load({ ...SOURCE, INSIGHTS_TRUSTED_PROXY: value }).trustedProxy).toEqual([
      '10.0.0.0/8',
      '192.168.0.0/16',
      '127.0.0.1',
      '::1',
      '2001:db8::/32',
      '::ffff:10.0.0.0/104',
    ]);
  });

  it('`serve` with 0.0.0.0/0 exits 2 with one line, no stack trace', async () => {
    const result = await runCli(
      ['serve'],
      cliEnv({ ...SOURCE, INSIGHTS_WEBHOOK_TOKEN: TOKEN, INSIGHTS_TRUSTED_PROXY: '0.0.0.0/0' }),
    );
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^.*INSIGHTS_TRUSTED_PROXY: a comma-separated list of the reverse proxies/);
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(result.stderr).not.toContain('CANARY');
  });
});
