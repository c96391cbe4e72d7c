import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FakeClock } from '@kubelet-kit/core/testing';
import { ContainerState, CriError } from '@kubelet-kit/cri';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  findTailLineStartIndex,
  type LogStreamWriter,
  type LogsRuntimeService,
  newLogOptions,
  type PodLogOptions,
  readLogs,
} from '../src/logs.js';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kk-readlogs-'));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

/** A runtime whose one container runs while `running.value` is true. */
function runtime(running: { value: boolean }): LogsRuntimeService {
  return {
    containerStatus: async ({ containerId }) => {
      if (containerId !== 'c1')
        throw new CriError({
          grpcStatus: 5,
          details: `container ${containerId} not found`,
          method: 'ContainerStatus',
        });
      return {
        status: { state: running.value ? ContainerState.CONTAINER_RUNNING : ContainerState.CONTAINER_EXITED },
        info: {},
      } as never;
    },
  };
}

function sink(): LogStreamWriter & { text(): string; chunks: Buffer[] } {
  const chunks: Buffer[] = [];
  return {
    chunks,
    write: (d) => {
      chunks.push(Buffer.from(d));
    },
    text: () => Buffer.concat(chunks).toString(),
  };
}

async function read(
  file: string,
  api: PodLogOptions,
  clock = new FakeClock(),
): Promise<{ out: string; err: string }> {
  const out = sink();
  const err = sink();
  await readLogs(file, 'c1', newLogOptions(api, clock.now()), runtime({ value: false }), out, err, { clock });
  return { out: out.text(), err: err.text() };
}

// Upstream logs_test.go TestReadLogs.
describe('readLogs (upstream TestReadLogs)', () => {
  const lines = [
    '2016-10-06T00:17:09.669794202Z stdout F line1\n',
    '2016-10-06T00:17:10.669794202Z stdout F line2\n',
    '2016-10-06T00:17:11.669794202Z stdout F line3\n',
  ];
  const cases: { name: string; opts: PodLogOptions; expected: string }[] = [
    { name: 'default options output all lines', opts: {}, expected: 'line1\nline2\nline3\n' },
    { name: 'TailLines 2 outputs the last 2 lines', opts: { tailLines: 2 }, expected: 'line2\nline3\n' },
    {
      name: 'TailLines 4 outputs all of a shorter log',
      opts: { tailLines: 4 },
      expected: 'line1\nline2\nline3\n',
    },
    { name: 'TailLines 0 outputs nothing', opts: { tailLines: 0 }, expected: '' },
    { name: 'LimitBytes 9 outputs the first 9 bytes', opts: { limitBytes: 9 }, expected: 'line1\nlin' },
    {
      name: 'LimitBytes 100 outputs all of a shorter log',
      opts: { limitBytes: 100 },
      expected: 'line1\nline2\nline3\n',
    },
    { name: 'LimitBytes 0 outputs nothing', opts: { limitBytes: 0 }, expected: '' },
    {
      name: 'SinceTime outputs lines on or after the time',
      opts: { sinceTime: Date.UTC(2016, 9, 6, 0, 17, 10) },
      expected: 'line2\nline3\n',
    },
    { name: 'SinceTime now outputs nothing', opts: { sinceTime: Date.UTC(2026, 0, 1) }, expected: '' },
    {
      name: 'follow outputs all lines of a stopped container',
      opts: { follow: true },
      expected: 'line1\nline2\nline3\n',
    },
    {
      name: 'follow with TailLines 2 outputs the last 2 lines',
      opts: { follow: true, tailLines: 2 },
      expected: 'line2\nline3\n',
    },
    {
      name: 'timestamps prefix each line',
      opts: { timestamps: true, tailLines: 1 },
      expected: '2016-10-06T00:17:11.669794202Z line3\n',
    },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const file = path.join(dir, '0.log');
      fs.writeFileSync(file, lines.join(''));
      expect((await read(file, c.opts)).out).toBe(c.expected);
    });
  }

  it('sinceSeconds counts back from the clock', async () => {
    const file = path.join(dir, '0.log');
    fs.writeFileSync(file, lines.join(''));
    const clock = new FakeClock(Date.UTC(2016, 9, 6, 0, 17, 12));
    expect((await read(file, { sinceSeconds: 2 }, clock)).out).toBe('line2\nline3\n');
    // The later of sinceSeconds and sinceTime wins.
    expect(
      (await read(file, { sinceSeconds: 3, sinceTime: Date.UTC(2016, 9, 6, 0, 17, 11) }, clock)).out,
    ).toBe('line3\n');
  });
});

// Upstream TestParseLog / TestWriteLogs: streams, partial lines, tags, docker JSON.
describe('readLogs parsing', () => {
  it('splits stdout and stderr and joins partial lines', async () => {
    const file = path.join(dir, '0.log');
    fs.writeFileSync(
      file,
      [
        '2016-10-20T18:39:20.57606443Z stdout F cri stdout test log\n',
        '2016-10-20T18:39:20.57606443Z stderr F cri stderr test log\n',
        '2016-10-20T18:39:20.57606443Z stdout P cri stdout partial \n',
        '2016-10-20T18:39:20.57606443Z stdout P:TAG1:TAG2 test \n',
        '2016-10-20T18:39:20.57606443Z stdout F log\n',
        'not a log line\n',
        '2016-10-20T18:39:20.57606443Z stdout F \n',
      ].join(''),
    );
    const { out, err } = await read(file, {});
    expect(out).toBe('cri stdout test log\ncri stdout partial test log\n\n');
    expect(err).toBe('cri stderr test log\n');
  });

  it('puts a timestamp only at the start of a joined line, in Go RFC3339Nano form', async () => {
    const file = path.join(dir, '0.log');
    let text = '';
    for (let i = 0; i < 3; i++) {
      text += `2022-10-29T16:10:22.592603030-05:00 stdout P ${i}\n`;
      text += '2022-10-29T16:10:22.592603030-05:00 stdout F \n';
    }
    fs.writeFileSync(file, text);
    const { out } = await read(file, { timestamps: true });
    expect(out).toBe(
      '2022-10-29T16:10:22.59260303-05:00 0\n2022-10-29T16:10:22.59260303-05:00 1\n2022-10-29T16:10:22.59260303-05:00 2\n',
    );
    // The byte limit counts the prefix too (upstream TestReadLogsLimitsWithTimestamps).
    expect((await read(file, { timestamps: true, limitBytes: 40 })).out).toBe(
      '2022-10-29T16:10:22.59260303-05:00 0\n202',
    );
  });

  it('reads the docker JSON format', async () => {
    const file = path.join(dir, '0.log');
    fs.writeFileSync(
      file,
      '{"log":"docker stdout test log","stream":"stdout","time":"2016-10-20T18:39:20.57606443Z"}\n' +
        '{"log":"docker stderr test log","stream":"stderr","time":"2016-10-20T18:39:20.57606443Z"}\n',
    );
    const { out, err } = await read(file, {});
    expect(out).toBe('docker stdout test log');
    expect(err).toBe('docker stderr test log');
  });

  it('writes an incomplete last line when not following', async () => {
    const file = path.join(dir, '0.log');
    fs.writeFileSync(
      file,
      '2016-10-06T00:17:09.669794202Z stdout F a\n2016-10-06T00:17:09.669794202Z stdout F b',
    );
    expect((await read(file, {})).out).toBe('a\nb');
  });

  it('reads lines longer than a read chunk', async () => {
    const file = path.join(dir, '0.log');
    const long = 'x'.repeat(200_000);
    fs.writeFileSync(
      file,
      `2016-10-06T00:17:09.669794202Z stdout F ${long}\n2016-10-06T00:17:09.669794202Z stdout F y\n`,
    );
    expect((await read(file, {})).out).toBe(`${long}\ny\n`);
  });

  it('names the file when it cannot be opened', async () => {
    await expect(read(path.join(dir, 'missing.log'), {})).rejects.toThrow(/missing\.log/);
  });
});

// Upstream tail_test.go TestTail.
describe('findTailLineStartIndex', () => {
  const line = `${'a'.repeat(1000)}\n`;
  const cases = [
    { n: -1, lines: 3, expected: 0 },
    { n: 0, lines: 3, expected: 3 * 1001 },
    { n: 1, lines: 3, expected: 2 * 1001 },
    { n: 2, lines: 3, expected: 1001 },
    { n: 3, lines: 3, expected: 0 },
    { n: 10, lines: 3, expected: 0 },
    { n: 1, lines: 0, expected: 0 },
  ];
  for (const c of cases) {
    it(`tail ${c.n} of ${c.lines} lines starts at ${c.expected}`, async () => {
      const file = path.join(dir, 'tail.log');
      fs.writeFileSync(file, line.repeat(c.lines));
      const f = await fs.promises.open(file, 'r');
      try {
        expect(await findTailLineStartIndex(f, c.n)).toBe(c.expected);
      } finally {
        await f.close();
      }
    });
  }
});

describe('readLogs follow', () => {
  async function until(check: () => boolean): Promise<void> {
    for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setImmediate(r));
    // fs.watch events come from the OS: give them real turns of the event loop.
    for (let i = 0; i < 2000 && !check(); i++) await new Promise((r) => setTimeout(r, 5));
    expect(check()).toBe(true);
  }

  it('keeps reading as the file grows, across a rotation, until the container stops', async () => {
    const file = path.join(dir, '0.log');
    fs.writeFileSync(file, '2016-10-06T00:17:09.669794202Z stdout F one\n');
    const clock = new FakeClock();
    const running = { value: true };
    const out = sink();
    const done = readLogs(
      file,
      'c1',
      newLogOptions({ follow: true }, clock.now()),
      runtime(running),
      out,
      out,
      {
        clock,
      },
    );
    let finished = false;
    void done.then(() => {
      finished = true;
    });
    await until(() => out.text() === 'one\n');
    // A line is taken only once its newline is there.
    fs.appendFileSync(file, '2016-10-06T00:17:10.669794202Z stdout F tw');
    await new Promise((r) => setTimeout(r, 20));
    fs.appendFileSync(file, 'o\n');
    // The force check (upstream 1 s) finds what a missed event would have announced.
    clock.advance(1000);
    await until(() => out.text() === 'one\ntwo\n');
    // Rotation: the old file gets a last line, is renamed, and a new one takes the name.
    fs.appendFileSync(file, '2016-10-06T00:17:11.669794202Z stdout F three\n');
    fs.renameSync(file, `${file}.20161006-001712`);
    fs.writeFileSync(file, '2016-10-06T00:17:12.669794202Z stdout F four\n');
    clock.advance(1000);
    await until(() => out.text() === 'one\ntwo\nthree\nfour\n');
    expect(finished).toBe(false);
    fs.appendFileSync(file, '2016-10-06T00:17:13.669794202Z stdout F five\n');
    running.value = false;
    clock.advance(1000);
    await done;
    expect(out.text()).toBe('one\ntwo\nthree\nfour\nfive\n');
  });

  it('ends when the signal aborts', async () => {
    const file = path.join(dir, '0.log');
    fs.writeFileSync(file, '2016-10-06T00:17:09.669794202Z stdout F one\n');
    const clock = new FakeClock();
    const out = sink();
    const ac = new AbortController();
    const done = readLogs(
      file,
      'c1',
      newLogOptions({ follow: true }, clock.now()),
      runtime({ value: true }),
      out,
      out,
      {
        clock,
        signal: ac.signal,
      },
    );
    await until(() => out.text() === 'one\n');
    ac.abort();
    await done;
  });

  it('stops at once for a container the runtime no longer knows', async () => {
    const file = path.join(dir, '0.log');
    fs.writeFileSync(file, '2016-10-06T00:17:09.669794202Z stdout F one\n');
    const clock = new FakeClock();
    const out = sink();
    await readLogs(
      file,
      'gone',
      newLogOptions({ follow: true }, clock.now()),
      runtime({ value: true }),
      out,
      out,
      {
        clock,
      },
    );
    expect(out.text()).toBe('one\n');
  });
});
