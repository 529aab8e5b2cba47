import assert from 'node:assert/strict';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { LogOutput } from '../../src/telemetry/log-output.js';
import { eventually } from '../helpers/wait.js';

describe('log lines are written in blocks, every line whole and in order', () => {
  const dir = mkdtempSync(join(tmpdir(), 'log-output-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  function output() {
    const file = join(dir, `out-${Math.random()}.log`);
    const fd = openSync(file, 'w');
    return { out: new LogOutput(fd), read: () => readFileSync(file, 'utf8'), close: () => closeSync(fd) };
  }

  it('keeps short lines in memory until flushed, then writes them all', () => {
    const { out, read, close } = output();
    out.write('{"n":1}\n');
    out.write('{"n":2,"name":"Fougère 🌿"}\n');
    assert.equal(read(), '', 'nothing written yet');
    out.flush();
    assert.equal(read(), '{"n":1}\n{"n":2,"name":"Fougère 🌿"}\n');
    out.flush();
    assert.equal(read(), '{"n":1}\n{"n":2,"name":"Fougère 🌿"}\n', 'a second flush writes nothing again');
    close();
  });

  it('writes the waiting lines by itself before they outgrow 32 KiB, whole and in order', () => {
    const { out, read, close } = output();
    const lines = Array.from({ length: 40 }, (_, i) => `${String(i).padStart(4, '0')}${'x'.repeat(1019)}\n`);
    for (const line of lines) out.write(line);
    const written = read();
    assert.ok(written.length >= 28 * 1024 && written.length <= 32 * 1024, `${written.length} bytes written`);
    assert.equal(written, lines.slice(0, written.length / 1024).join(''), 'whole lines, in order');
    out.flush();
    assert.equal(read(), lines.join(''));
    close();
  });

  it('writes a line longer than the block at once, after the lines before it', () => {
    const { out, read, close } = output();
    const long = `${'é'.repeat(20_000)}\n`;
    out.write('{"before":true}\n');
    out.write(long);
    assert.equal(read(), `{"before":true}\n${long}`);
    close();
  });

  it('writes what is waiting within 100 ms without being asked', async () => {
    const { out, read, close } = output();
    out.write('{"late":true}\n');
    assert.equal(await eventually('the line written', () => read() || undefined, 5_000, 20), '{"late":true}\n');
    close();
  });
});
