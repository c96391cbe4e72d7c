import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Pod, PodDNSConfig } from '@kubelet-kit/core';
import { InMemoryEventRecorder } from '@kubelet-kit/core/testing';
import { afterAll, describe, expect, it } from 'vitest';
import {
  DNSConfigurer,
  type DNSConfigurerOptions,
  getPodDNSType,
  mergeDNSOptions,
  parseResolvConf,
} from '../src/dns.js';
import { generatePodSandboxConfig } from '../src/index.js';

// The tables of upstream pkg/kubelet/network/dns/dns_test.go (v1.34: ExpandedDNSConfig is GA, so
// only its expanded-limit cases), plus the cases upstream's tests leave out.

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-dns-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
let files = 0;
function resolvConfFile(text: string): string {
  const file = path.join(dir, `resolv-${files++}.conf`);
  fs.writeFileSync(file, text);
  return file;
}

function configurer(options: DNSConfigurerOptions = {}) {
  const recorder = new InMemoryEventRecorder();
  const c = new DNSConfigurer({ recorder, nodeName: 'testNode', resolvConf: '', ...options });
  return { c, recorder, messages: () => recorder.events.map((e) => `${e.type} ${e.reason} ${e.message}`) };
}

const testPod = (spec: Pod['spec'] = { containers: [] }, namespace = 'testNS'): Pod => ({
  metadata: { name: 'test_pod', namespace, uid: 'u1' },
  spec,
});

describe('parseResolvConf (upstream TestParseResolvConf)', () => {
  const cases: [string, string[], string[], string[], boolean][] = [
    ['', [], [], [], false],
    [' ', [], [], [], false],
    ['\n', [], [], [], false],
    ['\t\n\t', [], [], [], false],
    ['#comment\n', [], [], [], false],
    [' #comment\n', [], [], [], false],
    ['#comment\n#comment', [], [], [], false],
    ['#comment\nnameserver', [], [], [], true],
    ['#comment\nnameserver\nsearch', [], [], [], true],
    ['#comment\nnameserver 1.2.3.4\nsearch', ['1.2.3.4'], [], [], false],
    ['nameserver 1.2.3.4', ['1.2.3.4'], [], [], false],
    [' nameserver 1.2.3.4', ['1.2.3.4'], [], [], false],
    ['\tnameserver 1.2.3.4', ['1.2.3.4'], [], [], false],
    ['nameserver\t1.2.3.4', ['1.2.3.4'], [], [], false],
    ['nameserver \t 1.2.3.4', ['1.2.3.4'], [], [], false],
    ['nameserver 1.2.3.4\nnameserver 5.6.7.8', ['1.2.3.4', '5.6.7.8'], [], [], false],
    ['nameserver 1.2.3.4 #comment', ['1.2.3.4'], [], [], false],
    ['search ', [], [], [], false],
    ['search .', [], ['.'], [], false],
    ['search foo', [], ['foo'], [], false],
    ['search foo bar', [], ['foo', 'bar'], [], false],
    ['search foo. bar', [], ['foo', 'bar'], [], false],
    ['search foo bar bat\n', [], ['foo', 'bar', 'bat'], [], false],
    ['search foo\nsearch bar', [], ['bar'], [], false],
    ['nameserver 1.2.3.4\nsearch foo bar', ['1.2.3.4'], ['foo', 'bar'], [], false],
    [
      'nameserver 1.2.3.4\nsearch foo\nnameserver 5.6.7.8\nsearch bar',
      ['1.2.3.4', '5.6.7.8'],
      ['bar'],
      [],
      false,
    ],
    ['#comment\nnameserver 1.2.3.4\n#comment\nsearch foo\ncomment', ['1.2.3.4'], ['foo'], [], false],
    ['options ', [], [], [], false],
    ['options ndots:5 attempts:2', [], [], ['ndots:5', 'attempts:2'], false],
    ['options ndots:1\noptions ndots:5 attempts:3', [], [], ['ndots:5', 'attempts:3'], false],
    [
      'nameserver 1.2.3.4\nsearch foo\nnameserver 5.6.7.8\nsearch bar\noptions ndots:5 attempts:4',
      ['1.2.3.4', '5.6.7.8'],
      ['bar'],
      ['ndots:5', 'attempts:4'],
      false,
    ],
  ];
  it.each(cases)('%j', (data, nameservers, searches, options, isErr) => {
    if (isErr) {
      expect(() => parseResolvConf(data)).toThrow('nameserver list is empty');
      return;
    }
    expect(parseResolvConf(data)).toEqual({ nameservers, searches, options });
  });

  it('takes no `;` comments and no `domain` line, as upstream', () => {
    expect(parseResolvConf('domain example.com\nnameserver 1.1.1.1 ; x\n; nameserver 2.2.2.2\n')).toEqual({
      nameservers: ['1.1.1.1'],
      searches: [],
      options: [],
    });
  });
});

describe('formDNSSearchFitsLimits (upstream TestFormDNSSearchFitsLimits)', () => {
  // 2048 = 128 + 127 * 15 + 15
  const list2048 = ['A'.repeat(128), ...Array.from({ length: 15 }, () => 'A'.repeat(127))];
  const numbered = (n: number) => [
    'testNS.svc.TEST',
    'svc.TEST',
    'TEST',
    ...Array.from({ length: n - 3 }, (_, i) => String(i + 4)),
  ];
  const limitEvent = (line: string) =>
    `Warning DNSConfigForming Search Line limits were exceeded, some search paths have been omitted, the applied search line is: ${line}`;
  const cases: { desc: string; hostNames: string[]; result: string[]; events: string[] }[] = [
    {
      desc: 'valid: 3 search paths',
      hostNames: ['testNS.svc.TEST', 'svc.TEST', 'TEST'],
      result: ['testNS.svc.TEST', 'svc.TEST', 'TEST'],
      events: [],
    },
    {
      desc: 'valid: 5 search paths',
      hostNames: ['testNS.svc.TEST', 'svc.TEST', 'TEST', 'AAA', 'BBB'],
      result: ['testNS.svc.TEST', 'svc.TEST', 'TEST', 'AAA', 'BBB'],
      events: [],
    },
    {
      desc: 'invalid: longer than 256 characters in search path list',
      hostNames: ['testNS.svc.TEST', 'svc.TEST', 'TEST', 'AAA', 'B'.repeat(256), 'BBB'],
      result: ['testNS.svc.TEST', 'svc.TEST', 'TEST', 'AAA', 'BBB'],
      events: [limitEvent('testNS.svc.TEST svc.TEST TEST AAA BBB')],
    },
    { desc: 'valid: 2048 characters in search path list', hostNames: list2048, result: list2048, events: [] },
    {
      desc: 'invalid: 2050 characters in search path list',
      hostNames: [...list2048, 'B'],
      result: list2048,
      events: [limitEvent(list2048.join(' '))],
    },
    {
      desc: 'valid: 7 search paths (the legacy limit of 6 is gone)',
      hostNames: ['testNS.svc.TEST', 'svc.TEST', 'TEST', 'AAA', 'BBB', 'CCC', 'DDD'],
      result: ['testNS.svc.TEST', 'svc.TEST', 'TEST', 'AAA', 'BBB', 'CCC', 'DDD'],
      events: [],
    },
    { desc: 'valid: 32 search paths', hostNames: numbered(32), result: numbered(32), events: [] },
    {
      desc: 'invalid: 33 search paths',
      hostNames: numbered(33),
      result: numbered(32),
      events: [limitEvent(numbered(32).join(' '))],
    },
  ];
  it.each(cases)('$desc', ({ hostNames, result, events }) => {
    const { c, recorder, messages } = configurer({ clusterDomain: 'TEST' });
    expect(c.formDNSSearchFitsLimits(hostNames, testPod())).toEqual(result);
    expect(messages()).toEqual(events);
    for (const e of recorder.events) expect(e.object).toMatchObject({ kind: 'Pod', name: 'test_pod' });
  });
});

describe('formDNSNameserversFitsLimits (upstream TestFormDNSNameserversFitsLimits)', () => {
  const cases: [string, string[], string[], boolean][] = [
    ['valid: 1 nameserver', ['127.0.0.1'], ['127.0.0.1'], false],
    [
      'valid: 3 nameservers',
      ['127.0.0.1', '10.0.0.10', '8.8.8.8'],
      ['127.0.0.1', '10.0.0.10', '8.8.8.8'],
      false,
    ],
    [
      'invalid: 4 nameservers, trimmed to 3',
      ['127.0.0.1', '10.0.0.10', '8.8.8.8', '1.2.3.4'],
      ['127.0.0.1', '10.0.0.10', '8.8.8.8'],
      true,
    ],
  ];
  it.each(cases)('%s', (_desc, nameservers, expected, event) => {
    const { c, messages } = configurer({ clusterDomain: 'TEST' });
    expect(c.formDNSNameserversFitsLimits(nameservers, testPod())).toEqual(expected);
    expect(messages()).toEqual(
      event
        ? [
            'Warning DNSConfigForming Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 127.0.0.1 10.0.0.10 8.8.8.8',
          ]
        : [],
    );
  });
});

describe('mergeDNSOptions (upstream TestMergeDNSOptions)', () => {
  const cases: [string, string[], PodDNSConfig['options'], string[]][] = [
    ['Empty dnsConfigOptions', ['ndots:5', 'debug'], undefined, ['ndots:5', 'debug']],
    [
      'No duplicated entries',
      ['ndots:5', 'debug'],
      [{ name: 'single-request' }, { name: 'attempts', value: '3' }],
      ['ndots:5', 'debug', 'single-request', 'attempts:3'],
    ],
    [
      'Overwrite duplicated entries',
      ['ndots:5', 'debug'],
      [
        { name: 'ndots', value: '3' },
        { name: 'debug' },
        { name: 'single-request' },
        { name: 'attempts', value: '3' },
      ],
      ['ndots:3', 'debug', 'single-request', 'attempts:3'],
    ],
  ];
  it.each(cases)('%s', (_desc, existing, options, expected) => {
    // Upstream's order is a map's; ours is the base's, then new names.
    expect(mergeDNSOptions(existing, options)).toEqual(expected);
  });

  it('writes an option with an empty value as its name alone', () => {
    expect(mergeDNSOptions(['edns0:', 'ndots:1'], [{ name: 'ndots', value: '' }])).toEqual([
      'edns0',
      'ndots',
    ]);
  });
});

describe('getPodDNSType (upstream TestGetPodDNSType)', () => {
  const cases: [string, boolean, string, string | undefined][] = [
    ['valid DNSClusterFirst without hostnetwork', false, 'ClusterFirst', 'cluster'],
    ['valid DNSClusterFirstWithHostNet with hostnetwork', true, 'ClusterFirstWithHostNet', 'cluster'],
    ['valid DNSClusterFirstWithHostNet without hostnetwork', false, 'ClusterFirstWithHostNet', 'cluster'],
    ['valid DNSDefault without hostnetwork', false, 'Default', 'host'],
    ['valid DNSDefault with hostnetwork', true, 'Default', 'host'],
    ['DNSClusterFirst with hostnetwork, fallback to DNSDefault', true, 'ClusterFirst', 'host'],
    ['valid DNSNone', false, 'None', 'none'],
    ['invalid DNS policy, should return error', false, 'invalidPolicy', undefined],
  ];
  it.each(cases)('%s', (_desc, hostNetwork, dnsPolicy, expected) => {
    const pod = testPod({ containers: [], hostNetwork, dnsPolicy });
    if (expected === undefined) expect(() => getPodDNSType(pod)).toThrow('invalid DNSPolicy=invalidPolicy');
    else expect(getPodDNSType(pod)).toBe(expected);
  });

  it('reads an unset policy as the API default, ClusterFirst', () => {
    expect(getPodDNSType(testPod({ containers: [] }))).toBe('cluster');
    expect(getPodDNSType(testPod({ containers: [], hostNetwork: true }))).toBe('host');
  });
});

describe('GetPodDNS (upstream TestGetPodDNS)', () => {
  const clusterNS = '203.0.113.1';
  // newTestPods: host network, no namespace.
  const pods = (): Pod[] =>
    ['ClusterFirstWithHostNet', 'ClusterFirst', 'ClusterFirst', 'Default'].map((dnsPolicy, i) => ({
      metadata: { name: `pod${i}`, uid: String(10000 + i) },
      spec: { containers: [], hostNetwork: i !== 2, dnsPolicy },
    }));

  it('without a resolv.conf: cluster DNS for cluster pods, the local resolver for host ones', () => {
    const { c } = configurer({ clusterDNS: [clusterNS], clusterDomain: 'kubernetes.io' });
    const out = pods().map((p) => c.getPodDNS(p));
    expect(out[0]!.servers).toEqual([clusterNS]);
    expect(out[0]!.searches[0]).toBe('.svc.kubernetes.io');
    expect(out[1]!.servers).toEqual(['127.0.0.1']);
    expect(out[1]!.searches).toEqual(['.']);
    expect(out[2]!.servers).toEqual([clusterNS]);
    expect(out[2]!.searches[0]).toBe('.svc.kubernetes.io');
    expect(out[3]!.servers).toEqual(['127.0.0.1']);
    expect(out[3]!.searches).toEqual(['.']);
  });

  it('with a resolv.conf: the cluster domains before the host search list', () => {
    const resolvConf = resolvConfFile('nameserver 9.9.9.9\nsearch a.example b.example\noptions ndots:1\n');
    const { c } = configurer({ clusterDNS: [clusterNS], clusterDomain: 'kubernetes.io', resolvConf });
    const out = pods().map((p) => c.getPodDNS(p));
    for (const i of [0, 2]) {
      expect(out[i]).toEqual({
        servers: [clusterNS],
        searches: ['.svc.kubernetes.io', 'svc.kubernetes.io', 'kubernetes.io', 'a.example', 'b.example'],
        options: ['ndots:5'],
      });
    }
    expect(out[1]).toEqual({
      servers: ['9.9.9.9'],
      searches: ['a.example', 'b.example'],
      options: ['ndots:1'],
    });
  });

  it('reads the resolv.conf again once it changes, and fails once it is gone', () => {
    const resolvConf = resolvConfFile('nameserver 9.9.9.9\nsearch a.example\n');
    const { c } = configurer({ resolvConf });
    const host = testPod({ containers: [], dnsPolicy: 'Default' });
    const first = c.getPodDNS(host);
    expect(first).toEqual({ servers: ['9.9.9.9'], searches: ['a.example'], options: [] });
    // A caller changing its copy changes nothing the next pod gets.
    first.servers.push('1.2.3.4');
    expect(c.getPodDNS(host).servers).toEqual(['9.9.9.9']);
    // Same size, so only the inode or the times tell: a rename over it, as editors and resolvconf do.
    const next = `${resolvConf}.new`;
    fs.writeFileSync(next, 'nameserver 8.8.8.8\nsearch b.example\n');
    fs.renameSync(next, resolvConf);
    expect(c.getPodDNS(host)).toEqual({ servers: ['8.8.8.8'], searches: ['b.example'], options: [] });
    // Written in place, longer.
    fs.writeFileSync(resolvConf, 'nameserver 7.7.7.7\nsearch c.example d.example\n');
    expect(c.getPodDNS(host)).toEqual({
      servers: ['7.7.7.7'],
      searches: ['c.example', 'd.example'],
      options: [],
    });
    fs.rmSync(resolvConf);
    expect(() => c.getPodDNS(host)).toThrow(/no such file or directory/);
  });

  it('points at the loopback of each node IP family without a resolv.conf', () => {
    const { c } = configurer({ nodeIPs: ['192.168.1.2', 'fd00::2'] });
    expect(c.getPodDNS(testPod({ containers: [], dnsPolicy: 'Default' }))).toEqual({
      servers: ['127.0.0.1', '::1'],
      searches: ['.'],
      options: [],
    });
  });
});

describe('GetPodDNS with dnsConfig (upstream TestGetPodDNSCustom)', () => {
  const resolvConf = resolvConfFile('nameserver 8.8.8.8\nsearch host.domain\n');
  const options = [{ name: 'ndots', value: '3' }, { name: 'debug' }];
  const cases: {
    desc: string;
    hostNetwork?: boolean;
    dnsPolicy: string;
    dnsConfig?: PodDNSConfig;
    expected: object;
  }[] = [
    {
      desc: 'DNSNone without DNSConfig should have empty DNS settings',
      dnsPolicy: 'None',
      expected: { servers: [], searches: [], options: [] },
    },
    {
      desc: 'DNSNone with DNSConfig should have a merged DNS settings',
      dnsPolicy: 'None',
      dnsConfig: { nameservers: ['203.0.113.1'], searches: ['my.domain', 'second.domain'], options },
      expected: {
        servers: ['203.0.113.1'],
        searches: ['my.domain', 'second.domain'],
        options: ['ndots:3', 'debug'],
      },
    },
    {
      desc: 'DNSClusterFirst with DNSConfig should have a merged DNS settings',
      dnsPolicy: 'ClusterFirst',
      dnsConfig: { nameservers: ['10.0.0.11'], searches: ['my.domain'], options },
      expected: {
        servers: ['10.0.0.10', '10.0.0.11'],
        searches: [
          'testNS.svc.kubernetes.io',
          'svc.kubernetes.io',
          'kubernetes.io',
          'host.domain',
          'my.domain',
        ],
        options: ['ndots:3', 'debug'],
      },
    },
    {
      desc: 'DNSClusterFirstWithHostNet with DNSConfig should have a merged DNS settings',
      hostNetwork: true,
      dnsPolicy: 'ClusterFirstWithHostNet',
      dnsConfig: { nameservers: ['10.0.0.11'], searches: ['my.domain'], options },
      expected: {
        servers: ['10.0.0.10', '10.0.0.11'],
        searches: [
          'testNS.svc.kubernetes.io',
          'svc.kubernetes.io',
          'kubernetes.io',
          'host.domain',
          'my.domain',
        ],
        options: ['ndots:3', 'debug'],
      },
    },
    {
      desc: 'DNSDefault with DNSConfig should have a merged DNS settings',
      dnsPolicy: 'Default',
      dnsConfig: { nameservers: ['10.0.0.11'], searches: ['my.domain'], options },
      expected: {
        servers: ['8.8.8.8', '10.0.0.11'],
        searches: ['host.domain', 'my.domain'],
        options: ['ndots:3', 'debug'],
      },
    },
  ];
  it.each(cases)('$desc', ({ hostNetwork, dnsPolicy, dnsConfig, expected }) => {
    const { c } = configurer({ clusterDNS: ['10.0.0.10'], clusterDomain: 'kubernetes.io', resolvConf });
    const pod = testPod({
      containers: [],
      dnsPolicy,
      ...(hostNetwork ? { hostNetwork } : {}),
      ...(dnsConfig ? { dnsConfig } : {}),
    });
    expect(c.getPodDNS(pod)).toEqual(expected);
  });
});

describe('GetPodDNS beyond upstream’s tables', () => {
  it('adds no cluster search domains without a cluster domain (upstream’s default is empty)', () => {
    const resolvConf = resolvConfFile('nameserver 1.1.1.1\nsearch host.local host.local\n');
    const { c } = configurer({ clusterDNS: ['10.96.0.10'], resolvConf });
    // No cluster domain: the host's list as it is, not even deduplicated.
    expect(c.getPodDNS(testPod())).toEqual({
      servers: ['10.96.0.10'],
      searches: ['host.local', 'host.local'],
      options: ['ndots:5'],
    });
  });

  it('keeps a lone "." search domain and drops trailing dots, deduplicating after the cluster domains', () => {
    const resolvConf = resolvConfFile('nameserver 1.1.1.1\nsearch host.local. cluster.local . host.local\n');
    const { c } = configurer({ clusterDNS: ['10.96.0.10'], clusterDomain: 'cluster.local', resolvConf });
    expect(c.getPodDNS(testPod({ containers: [], dnsPolicy: 'Default' })).searches).toEqual([
      'host.local',
      'cluster.local',
      '.',
      'host.local',
    ]);
    expect(c.getPodDNS(testPod()).searches).toEqual([
      'testNS.svc.cluster.local',
      'svc.cluster.local',
      'cluster.local',
      'host.local',
      '.',
    ]);
  });

  it('falls back to Default with MissingClusterDNS events when no cluster DNS is configured', () => {
    const resolvConf = resolvConfFile('nameserver 1.1.1.1\nsearch host.local\noptions edns0\n');
    const { c, recorder } = configurer({ clusterDomain: 'cluster.local', resolvConf });
    for (const dnsPolicy of ['ClusterFirst', 'ClusterFirstWithHostNet']) {
      expect(c.getPodDNS(testPod({ containers: [], dnsPolicy }))).toEqual({
        servers: ['1.1.1.1'],
        searches: ['host.local'],
        options: ['edns0'],
      });
    }
    const msg =
      'kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.';
    expect(recorder.events.slice(0, 2).map((e) => [e.object, e.type, e.reason, e.message])).toEqual([
      [{ kind: 'Node', name: 'testNode' }, 'Warning', 'MissingClusterDNS', msg],
      [
        { kind: 'Pod', namespace: 'testNS', name: 'test_pod', uid: 'u1' },
        'Warning',
        'MissingClusterDNS',
        `pod: "test_pod_testNS(u1)". ${msg}`,
      ],
    ]);
    expect(recorder.events).toHaveLength(4);
    // Default itself, and None, want no cluster DNS: no event.
    c.getPodDNS(testPod({ containers: [], dnsPolicy: 'Default' }));
    c.getPodDNS(testPod({ containers: [], dnsPolicy: 'None' }));
    expect(recorder.events).toHaveLength(4);
  });

  it('falls back to ClusterFirst for an unknown policy', () => {
    const { c } = configurer({ clusterDNS: ['10.96.0.10'], clusterDomain: 'cluster.local' });
    expect(c.getPodDNS(testPod({ containers: [], hostNetwork: true, dnsPolicy: 'Bogus' })).servers).toEqual([
      '10.96.0.10',
    ]);
  });

  it('trims the merged config: cluster DNS plus dnsConfig nameservers to three, with a warning', () => {
    const { c, messages } = configurer({ clusterDNS: ['10.0.0.1', '10.0.0.2'], clusterDomain: 'c.local' });
    const pod = testPod({ containers: [], dnsConfig: { nameservers: ['10.0.0.2', '10.0.0.3', '10.0.0.4'] } });
    expect(c.getPodDNS(pod).servers).toEqual(['10.0.0.1', '10.0.0.2', '10.0.0.3']);
    expect(messages()).toEqual([
      'Warning DNSConfigForming Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 10.0.0.1 10.0.0.2 10.0.0.3',
    ]);
  });

  it('fails when the resolv.conf cannot be read or parsed, whatever the policy', () => {
    const { c } = configurer({ clusterDNS: ['10.96.0.10'], resolvConf: path.join(dir, 'missing.conf') });
    expect(() => c.getPodDNS(testPod({ containers: [], dnsPolicy: 'None' }))).toThrow(
      `open ${path.join(dir, 'missing.conf')}: no such file or directory`,
    );
    const bad = configurer({ resolvConf: resolvConfFile('nameserver\n') });
    expect(() => bad.c.getPodDNS(testPod())).toThrow('nameserver list is empty');
    // Upstream reads at most 10 MiB.
    const huge = resolvConfFile(`nameserver 1.1.1.1\n${'#'.repeat(10 << 20)}\n`);
    expect(() => configurer({ resolvConf: huge }).c.getPodDNS(testPod())).toThrow(
      'the read limit is reached',
    );
    const fits = resolvConfFile(`nameserver 1.1.1.1\n${'#'.repeat((10 << 20) - 40)}\n`);
    expect(
      configurer({ resolvConf: fits }).c.getPodDNS(testPod({ containers: [], dnsPolicy: 'Default' })).servers,
    ).toEqual(['1.1.1.1']);
  });

  it('leaves out a cluster DNS entry that is not an IP, as upstream, and writes IPv6 as Go does', () => {
    const { c } = configurer({
      clusterDNS: ['10.0.0.1', 'dns.local', 'FD00:0:0::A'],
      clusterDomain: 'c.local',
    });
    expect(c.getPodDNS(testPod()).servers).toEqual(['10.0.0.1', 'fd00::a']);
  });

  it('reaches the sandbox config, whose sandbox fails on a bad resolv.conf', () => {
    const resolvConf = resolvConfFile('nameserver 1.1.1.1\nsearch host.local\n');
    const base = { podLogsRootDirectory: '/logs', cgroupParent: '' };
    const cfg = generatePodSandboxConfig(testPod(), 0, {
      ...base,
      clusterDNS: ['10.96.0.10'],
      clusterDomain: 'cluster.local',
      resolvConf,
    });
    expect(cfg.dnsConfig).toEqual({
      servers: ['10.96.0.10'],
      searches: ['testNS.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'host.local'],
      options: ['ndots:5'],
    });
    expect(() =>
      generatePodSandboxConfig(testPod(), 0, { ...base, resolvConf: resolvConfFile('nameserver') }),
    ).toThrow('nameserver list is empty');
  });
});

describe('the cluster domain in the pod hostname', () => {
  it('makes the FQDN from the cluster domain, ending in a dot without one (upstream GeneratePodHostNameAndDomain)', () => {
    const pod = testPod({ containers: [], hostname: 'h', subdomain: 'sub', setHostnameAsFQDN: true });
    const base = { podLogsRootDirectory: '/logs', cgroupParent: '', resolvConf: '' };
    expect(generatePodSandboxConfig(pod, 0, { ...base, clusterDomain: 'cluster.local' }).hostname).toBe(
      'h.sub.testNS.svc.cluster.local',
    );
    expect(generatePodSandboxConfig(pod, 0, base).hostname).toBe('h.sub.testNS.svc.');
  });
});

describe('CheckLimitsForResolvConf', () => {
  const check = (text: string | undefined, clusterDomain = '') => {
    const resolvConf = text === undefined ? path.join(dir, 'absent.conf') : resolvConfFile(text);
    const { c, recorder } = configurer({ resolvConf, clusterDomain });
    c.checkLimitsForResolvConf();
    for (const e of recorder.events) expect(e.object).toEqual({ kind: 'Node', name: 'testNode' });
    return { resolvConf, events: recorder.events.map((e) => `${e.type} ${e.reason} ${e.message}`) };
  };
  const domains = (n: number) => Array.from({ length: n }, (_, i) => `d${i}.example`).join(' ');

  it('says nothing of a resolv.conf that fits', () => {
    expect(check(`nameserver 1.1.1.1\nsearch ${domains(29)}\n`, 'cluster.local').events).toEqual([]);
    expect(check(`search ${domains(32)}\n`).events).toEqual([]);
  });

  it('warns of more search domains than leave room for the cluster ones', () => {
    const r = check(`search ${domains(30)}\n`, 'cluster.local');
    expect(r.events).toEqual([
      `Warning CheckLimitsForResolvConf Resolv.conf file '${r.resolvConf}' contains search line consisting of more than 29 domains!`,
    ]);
    const r2 = check(`search ${domains(33)}\n`);
    expect(r2.events).toEqual([
      `Warning CheckLimitsForResolvConf Resolv.conf file '${r2.resolvConf}' contains search line consisting of more than 32 domains!`,
    ]);
  });

  it('warns of a search domain longer than 253 characters, and of a search line longer than 2048', () => {
    const r = check(`search a.example ${'b'.repeat(254)}\n`);
    expect(r.events).toEqual([
      `Warning CheckLimitsForResolvConf Resolv.conf file "${r.resolvConf}" contains a search path which length is more than allowed 253 chars!`,
    ]);
    const long = Array.from({ length: 10 }, () => 'c'.repeat(250)).join(' ');
    const r2 = check(`search ${long}\n`);
    expect(r2.events).toEqual([
      `Warning CheckLimitsForResolvConf Resolv.conf file '${r2.resolvConf}' contains search line which length is more than allowed 2048 chars!`,
    ]);
  });

  it('warns when the file cannot be opened or parsed, and checks nothing without one', () => {
    const r = check(undefined);
    expect(r.events).toEqual([
      `Warning CheckLimitsForResolvConf open ${r.resolvConf}: no such file or directory`,
    ]);
    expect(check('nameserver\n').events).toEqual([
      'Warning CheckLimitsForResolvConf nameserver list is empty ',
    ]);
    const { c, recorder } = configurer({ resolvConf: '' });
    c.checkLimitsForResolvConf();
    expect(recorder.events).toEqual([]);
  });
});
