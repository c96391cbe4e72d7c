import type { Pod } from '@kubelet-kit/core';
import { describe, expect, it } from 'vitest';
import {
  isValidSysctlPattern,
  SysctlAllowlist,
  safeSysctlAllowlist,
  toDotSeparatedSysctl,
} from '../src/sysctl.js';

const noKernelLimit = [
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_unprivileged_port_start',
];

describe('safeSysctlAllowlist (upstream Test_getSafeSysctlAllowlist)', () => {
  it.each([
    ['an unreadable kernel version: only those with no kernel limit', 'unknown', noKernelLimit],
    [
      '3.18: plus ip_local_reserved_ports',
      '3.18.0-957.27.2.el7.x86_64',
      [...noKernelLimit, 'net.ipv4.ip_local_reserved_ports'],
    ],
    [
      '5.15: all of them',
      '5.15.0-75-generic',
      [
        ...noKernelLimit,
        'net.ipv4.ip_local_reserved_ports',
        'net.ipv4.tcp_keepalive_time',
        'net.ipv4.tcp_fin_timeout',
        'net.ipv4.tcp_keepalive_intvl',
        'net.ipv4.tcp_keepalive_probes',
        'net.ipv4.tcp_rmem',
        'net.ipv4.tcp_wmem',
      ],
    ],
    [
      '4.5: keepalive but not fin_timeout (4.6) nor rmem/wmem (4.15)',
      '4.5.0',
      [
        ...noKernelLimit,
        'net.ipv4.ip_local_reserved_ports',
        'net.ipv4.tcp_keepalive_time',
        'net.ipv4.tcp_keepalive_intvl',
        'net.ipv4.tcp_keepalive_probes',
      ],
    ],
  ])('%s', (_name, release, want) => {
    expect(safeSysctlAllowlist(release, 'linux')).toEqual(want);
  });

  it('is empty off Linux', () => {
    expect(safeSysctlAllowlist('6.1.0', 'darwin')).toEqual([]);
  });
});

describe('SysctlAllowlist (upstream TestNewAllowlist)', () => {
  it.each([
    [['kernel.msg*', 'kernel.sem'], false],
    [['kernel/msg*', 'kernel/sem'], false],
    [[' kernel.msg*'], true],
    [['kernel.msg* '], true],
    [['net.-'], true],
    [['net.*.foo'], true],
    [['net.*/foo'], true],
    [['foo'], true],
    [['foo*'], true],
  ])('%j: error %s', (sysctls, err) => {
    const make = () => SysctlAllowlist.forNode(sysctls, '5.15.0');
    if (err) expect(make).toThrow();
    else expect(make).not.toThrow();
  });

  it('names the bad pattern and why', () => {
    expect(() => new SysctlAllowlist(['foo'])).toThrow('the sysctl "foo" are not known to be namespaced');
    expect(() => new SysctlAllowlist(['foo*'])).toThrow('the sysctls "foo*" are not known to be namespaced');
    expect(() => new SysctlAllowlist(['net.-'])).toThrow(/^sysctl "net.-" must have at most 253 characters/);
  });
});

describe('SysctlAllowlist.validate (upstream TestAllowlist)', () => {
  const w = SysctlAllowlist.forNode(['kernel.msg*', 'kernel.sem', 'net.b.*'], '5.15.0');
  it.each([
    ['kernel.shm_rmid_forced'],
    ['kernel/shm_rmid_forced'],
    ['net.ipv4.ip_local_port_range'],
    ['kernel.msgmax'],
    ['kernel.sem'],
    ['kernel/sem'],
  ])('allows %s', (sysctl) => {
    expect(w.validate(sysctl, false, false)).toBeUndefined();
  });

  it.each([
    ['kernel.shm_rmid_forced', false, true],
    ['net.ipv4.ip_local_port_range', true, false],
    ['foo', false, false],
    ['net.a.b.c', false, false],
    ['net.ipv4.ip_local_port_range.a.b.c', false, false],
    ['kernel.msgmax', false, true],
    ['kernel.sem', false, true],
    ['net.b.c', true, false],
  ])('refuses %s (hostNetwork %s, hostIPC %s)', (sysctl, hostNet, hostIPC) => {
    expect(w.validate(sysctl, hostNet, hostIPC)).toBeDefined();
  });

  const pod = (sysctls: string[], extra: Partial<NonNullable<Pod['spec']>> = {}): Pod => ({
    metadata: { name: 'p', uid: 'p' },
    spec: {
      containers: [{ name: 'c', image: 'i' }],
      securityContext: { sysctls: sysctls.map((name) => ({ name, value: '1' })) },
      ...extra,
    },
  });

  it('fails the pod with upstream reason and message', () => {
    const safe = SysctlAllowlist.forNode([], '6.1.0');
    expect(safe.admit(pod(['kernel.msgmax']))).toEqual({
      admit: false,
      reason: 'SysctlForbidden',
      message: 'forbidden sysctl: "kernel.msgmax" not allowlisted',
    });
    expect(safe.admit(pod(['net.ipv4.ip_local_port_range'], { hostNetwork: true }))).toEqual({
      admit: false,
      reason: 'SysctlForbidden',
      message: 'forbidden sysctl: "net.ipv4.ip_local_port_range" not allowed with host net enabled',
    });
    expect(safe.admit(pod(['kernel.shm_rmid_forced'], { hostIPC: true })).message).toBe(
      'forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host ipc enabled',
    );
    expect(safe.admit(pod(['net.ipv4.ip_local_port_range', 'kernel.shm_rmid_forced']))).toEqual({
      admit: true,
    });
    expect(safe.admit(pod([]))).toEqual({ admit: true });
  });

  it('reads slash-separated names with dots in a segment', () => {
    expect(toDotSeparatedSysctl('net/ipv4/conf/eno2.100/rp_filter')).toBe('net.ipv4.conf.eno2/100.rp_filter');
    expect(toDotSeparatedSysctl('net.ipv4.conf.eno2/100.rp_filter')).toBe('net.ipv4.conf.eno2/100.rp_filter');
    const conf = new SysctlAllowlist(['net.ipv4.conf.*']);
    expect(conf.validate('net/ipv4/conf/eno2.100/rp_filter', false, false)).toBeUndefined();
    expect(isValidSysctlPattern('net/ipv4/conf/eno2.100/rp_filter')).toBe(true);
    expect(isValidSysctlPattern('*')).toBe(true);
    expect(isValidSysctlPattern(`net.${'a'.repeat(250)}`)).toBe(false);
  });
});
