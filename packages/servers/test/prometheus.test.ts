import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { PrometheusServer, promtool } from '../src/index.js';

describe('PrometheusServer', () => {
  it('loads its config and rule files, answers queries, restarts on its port, and leaves nothing behind', async () => {
    const rules = [
      'groups:',
      '  - name: t',
      '    rules:',
      '      - record: job:up:sum',
      '        expr: sum by (job) (up)',
      '',
    ];
    const server = await PrometheusServer.start({
      config: [
        'global: { scrape_interval: 1s, evaluation_interval: 1s }',
        'rule_files: [rules.yml]',
        '',
      ].join('\n'),
      files: { 'rules.yml': rules.join('\n') },
    });
    try {
      expect((await promtool(['check', 'rules', 'rules.yml'], { cwd: server.dir })).output).toMatch(
        /SUCCESS: 1 rules found/,
      );
      const loaded = await server.api<{ groups: Array<{ rules: Array<{ name: string }> }> }>('/api/v1/rules');
      expect(loaded.groups[0]?.rules[0]?.name).toBe('job:up:sum');
      expect(await server.query('vector(1)')).toEqual([{ metric: {}, value: [expect.any(Number), '1'] }]);
      await expect(server.query('up[1m]')).rejects.toThrow(/matrix, not a vector/);
      const port = server.port;
      await server.restart();
      expect(server.port).toBe(port);
      expect(await server.query('vector(2)')).toHaveLength(1);
    } finally {
      await server.stop();
    }
    expect(existsSync(server.dir)).toBe(false);
  });
});
