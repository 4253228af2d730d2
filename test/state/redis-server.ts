import { type ChildProcess, spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { tmpdir } from 'node:os';
import { freePort } from '../helpers.js';

/** Debian's redis-server; tests start their own on a loopback port and never touch a system service. */
export const REDIS_SERVER = process.env.LLR_REDIS_SERVER ?? '/usr/bin/redis-server';

/** A redis-server child process on 127.0.0.1, persistence off, restartable on the same port. */
export interface RedisProcess {
  readonly port: number;
  readonly url: string;
  readonly pid: number | undefined;
  /** Stops the server (SIGTERM) and resolves once the process has exited. */
  stop(): Promise<void>;
  /** Starts a fresh, empty server on the same port after stop(). */
  restart(): Promise<void>;
  /** SIGSTOP / SIGCONT: a server that hangs without closing its connections. */
  pause(): void;
  resume(): void;
}

function assertInstalled(): void {
  try {
    accessSync(REDIS_SERVER, constants.X_OK);
  } catch {
    throw new Error(
      `redis-server not found at ${REDIS_SERVER}: the shared-state tests need Debian's redis-server ` +
        '(apt-get install redis-server), or set LLR_REDIS_SERVER to its path',
    );
  }
}

function launch(port: number): Promise<ChildProcess> {
  const child = spawn(
    REDIS_SERVER,
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      tmpdir(),
      '--daemonize',
      'no',
      '--loglevel',
      'warning',
      '--always-show-logo',
      'no',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (chunk: Buffer): void => {
      out += chunk.toString('utf8');
      // With loglevel warning the server prints nothing when ready, so probe the port instead.
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`redis-server exited with ${code}: ${out.trim()}`)));
    void waitForPort(port, child).then(() => {
      child.removeAllListeners('exit');
      child.removeAllListeners('error');
      resolve(child);
    }, reject);
  });
}

async function waitForPort(port: number, child: ChildProcess): Promise<void> {
  const { connect } = await import('node:net');
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error('redis-server exited before accepting connections');
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.write('PING\r\n');
        socket.once('data', (d) => {
          socket.destroy();
          resolve(d.toString().startsWith('+PONG'));
        });
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`redis-server did not accept connections on port ${port}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Starts redis-server on a free loopback port chosen now; fails with a clear message when missing. */
export async function startRedis(): Promise<RedisProcess> {
  assertInstalled();
  let port = 0;
  let child: ChildProcess | undefined;
  // freePort() can race with another process taking the port: try a few.
  for (let attempt = 0; child === undefined; attempt++) {
    port = await freePort();
    try {
      child = await launch(port);
    } catch (err) {
      if (attempt >= 4) throw err;
    }
  }
  let current: ChildProcess | undefined = child;
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    get pid() {
      return current?.pid;
    },
    async stop() {
      if (!current) return;
      const c = current;
      current = undefined;
      c.kill('SIGCONT');
      c.kill('SIGTERM');
      await exited(c);
    },
    async restart() {
      if (current) throw new Error('redis-server is still running');
      current = await launch(port);
    },
    pause() {
      current?.kill('SIGSTOP');
    },
    resume() {
      current?.kill('SIGCONT');
    },
  };
}
