import assert from 'node:assert/strict';
import { promises as dns } from 'node:dns';
import { test } from 'node:test';
import { DnsDiscovery, type DnsResolver } from '../../src/discovery/dns-discovery.js';
import { createRouter } from '../../src/router.js';
import { DnsStub } from './dns-stub.js';

test('A records from a real DNS server become workers; vanished ones are removed', async (t) => {
  const stub = new DnsStub();
  await stub.start();
  t.after(() => stub.close());
  stub.records.set('vllm.llm.svc', ['10.1.0.1', '10.1.0.2']);
  const resolver = new dns.Resolver({ timeout: 500, tries: 1 });
  resolver.setServers([`127.0.0.1:${stub.port}`]);

  const router = createRouter({ workers: ['http://10.9.9.9:8000'] });
  const discovery = new DnsDiscovery(router, {
    name: 'vllm.llm.svc',
    port: 8000,
    intervalSecs: 60,
    engine: 'vllm',
    resolver,
  });
  await discovery.start();
  t.after(() => discovery.stop());
  const ids = () =>
    router
      .workers()
      .map((w) => w.id)
      .sort();
  assert.deepEqual(ids(), ['10.1.0.1:8000', '10.1.0.2:8000', '10.9.9.9:8000']);
  assert.equal(router.pool.get('10.1.0.1:8000')?.engine, 'vllm');

  stub.records.set('vllm.llm.svc', ['10.1.0.2', '10.1.0.3']);
  await discovery.refresh();
  assert.deepEqual(
    ids(),
    ['10.1.0.2:8000', '10.1.0.3:8000', '10.9.9.9:8000'],
    'static workers are never removed',
  );

  stub.records.delete('vllm.llm.svc'); // NXDOMAIN: the service is gone
  await discovery.refresh();
  assert.deepEqual(ids(), ['10.9.9.9:8000']);
});

test('SRV answers carry ports; a failing resolver keeps the current workers', async () => {
  let fail = false;
  const resolver: DnsResolver = {
    resolve4: async () => [],
    resolve6: async () => [],
    resolveSrv: async () => {
      if (fail) throw Object.assign(new Error('queryTimeout'), { code: 'ETIMEOUT' });
      return [
        { name: 'gpu-a.llm.svc.', port: 30000 },
        { name: 'gpu-b.llm.svc.', port: 30001 },
      ];
    },
  };
  const warnings: string[] = [];
  const logger = { debug() {}, info() {}, warn: (_o: object, m: string) => warnings.push(m), error() {} };
  const router = createRouter({});
  const discovery = new DnsDiscovery(router, {
    name: '_http._tcp.sglang.llm.svc',
    intervalSecs: 60,
    resolver,
    logger,
  });
  await discovery.refresh();
  assert.deepEqual(
    router.workers().map((w) => w.id),
    ['gpu-a.llm.svc:30000', 'gpu-b.llm.svc:30001'],
  );
  fail = true;
  await discovery.refresh();
  await discovery.refresh();
  assert.equal(router.workers().length, 2);
  assert.equal(warnings.length, 1, 'a repeated failure is logged once');
});
