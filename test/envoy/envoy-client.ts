// A test stand-in for Envoy's ext_proc filter: a grpc-js client built from Envoy's official
// protos that sends the messages Envoy sends, in Envoy's order, over one HTTP/2 connection.
import { Client, credentials, Metadata, type ClientDuplexStream, type StatusObject } from '@grpc/grpc-js';
import type { HeaderValue, ProcessingRequest, ProcessingResponse } from '../../src/envoy/messages.js';
import { processMethod, type ProcessMethod } from './official-protos.js';

/** Header list as Envoy sends it: lower-case keys, values in raw_value bytes. */
export function rawHeaders(headers: Record<string, string> | [string, string][]): HeaderValue[] {
  const entries = Array.isArray(headers) ? headers : Object.entries(headers);
  return entries.map(([key, value]) => ({ key: key.toLowerCase(), raw_value: Buffer.from(value, 'latin1') }));
}

/** One Process stream with a promise-based reader. */
export class ExtProcCall {
  readonly stream: ClientDuplexStream<ProcessingRequest, ProcessingResponse>;
  /** Resolves with the final gRPC status (OK after a clean close, CANCELLED after cancel()). */
  readonly status: Promise<StatusObject>;
  readonly #received: ProcessingResponse[] = [];
  readonly #waiters: { resolve: (r: ProcessingResponse) => void; reject: (e: Error) => void }[] = [];
  #over: Error | undefined;

  constructor(stream: ClientDuplexStream<ProcessingRequest, ProcessingResponse>) {
    this.stream = stream;
    this.status = new Promise((resolve) => stream.on('status', resolve));
    stream.on('data', (res: ProcessingResponse) => {
      const waiter = this.#waiters.shift();
      if (waiter) waiter.resolve(res);
      else this.#received.push(res);
    });
    const over = (err: Error) => {
      this.#over ??= err;
      for (const w of this.#waiters.splice(0)) w.reject(this.#over);
    };
    stream.on('error', over);
    stream.on('end', () => over(new Error('stream ended')));
  }

  send(req: ProcessingRequest): this {
    this.stream.write(req);
    return this;
  }

  /** The next response; rejects if the stream ends or fails first. */
  next(): Promise<ProcessingResponse> {
    const ready = this.#received.shift();
    if (ready) return Promise.resolve(ready);
    if (this.#over) return Promise.reject(this.#over);
    return new Promise((resolve, reject) => this.#waiters.push({ resolve, reject }));
  }

  async exchange(req: ProcessingRequest): Promise<ProcessingResponse> {
    this.send(req);
    return this.next();
  }

  /** Half-close, as Envoy does when the HTTP stream is done. */
  end(): Promise<StatusObject> {
    this.stream.end();
    return this.status;
  }

  cancel(): void {
    this.stream.cancel();
  }
}

/** A client over one channel (one HTTP/2 connection), like one Envoy worker thread. */
export class EnvoyClient {
  readonly client: Client;
  readonly #method: ProcessMethod;

  constructor(port: number, which: 'official' | 'ours' = 'official') {
    this.client = new Client(`127.0.0.1:${port}`, credentials.createInsecure());
    this.#method = processMethod(which);
  }

  open(options: { deadline?: Date | number } = {}): ExtProcCall {
    const m = this.#method;
    const stream = this.client.makeBidiStreamRequest(
      m.path,
      m.requestSerialize,
      m.responseDeserialize,
      new Metadata(),
      options,
    );
    return new ExtProcCall(stream);
  }

  close(): void {
    this.client.close();
  }
}
