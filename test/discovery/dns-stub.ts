import { createSocket, type Socket } from 'node:dgram';
import type { AddressInfo } from 'node:net';

/**
 * A tiny real DNS server on UDP 127.0.0.1: answers A queries from a mutable table, AAAA with no
 * data, anything unknown with NXDOMAIN. Enough for node's resolver to talk to it for real.
 */
export class DnsStub {
  readonly records = new Map<string, string[]>();
  readonly #socket: Socket = createSocket('udp4');
  port = 0;

  async start(): Promise<void> {
    this.#socket.on('message', (msg, peer) => {
      const reply = this.#answer(msg);
      if (reply) this.#socket.send(reply, peer.port, peer.address);
    });
    await new Promise<void>((resolve) => this.#socket.bind(0, '127.0.0.1', resolve));
    this.port = (this.#socket.address() as AddressInfo).port;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.#socket.close(() => resolve()));
  }

  #answer(query: Buffer): Buffer | undefined {
    if (query.length < 12) return undefined;
    const labels: string[] = [];
    let offset = 12;
    while (offset < query.length && query[offset] !== 0) {
      const len = query[offset]!;
      labels.push(query.subarray(offset + 1, offset + 1 + len).toString('ascii'));
      offset += 1 + len;
    }
    const questionEnd = offset + 5; // zero byte + qtype + qclass
    const qtype = query.readUInt16BE(offset + 1);
    const name = labels.join('.').toLowerCase();
    const known = this.records.get(name);
    const ips = qtype === 1 ? (known ?? []) : [];
    const header = Buffer.alloc(12);
    query.copy(header, 0, 0, 2); // id
    header.writeUInt16BE(known ? 0x8180 : 0x8183, 2); // response, recursion available; rcode 0 or 3
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(ips.length, 6);
    const answers = ips.map((ip) => {
      const a = Buffer.alloc(16);
      a.writeUInt16BE(0xc00c, 0); // pointer to the question name
      a.writeUInt16BE(1, 2);
      a.writeUInt16BE(1, 4);
      a.writeUInt32BE(0, 6);
      a.writeUInt16BE(4, 10);
      ip.split('.').forEach((octet, i) => a.writeUInt8(Number(octet), 12 + i));
      return a;
    });
    return Buffer.concat([header, query.subarray(12, questionEnd), ...answers]);
  }
}
