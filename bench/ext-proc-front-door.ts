// The ext_proc front door of the policy benchmark: a client that plays Envoy (request headers in,
// destination header out, then response headers at the end, as Envoy's default processing mode
// sends them), after which the load generator calls the chosen worker directly, as an
// ORIGINAL_DST cluster would.
import { Client, credentials, Metadata, type ClientDuplexStream, type MethodDefinition } from '@grpc/grpc-js';
import { createExtProcServer } from '../src/envoy/ext-proc-server.js';
import type { ProcessingRequest, ProcessingResponse } from '../src/envoy/messages.js';
import { loadProtos } from '../src/envoy/proto-loader.js';
import type { Router } from '../src/router.js';
import type { LoadRequest, PickOutcome, TargetPick } from '../src/sim/load-generator.js';
import { useExtProcFrontDoor } from '../src/sim/policy-comparison.js';

type Stream = ClientDuplexStream<ProcessingRequest, ProcessingResponse>;

function nextMessage(stream: Stream): Promise<ProcessingResponse> {
  return new Promise((resolve, reject) => {
    const onData = (res: ProcessingResponse) => {
      stream.off('error', onError);
      resolve(res);
    };
    const onError = (err: Error) => {
      stream.off('data', onData);
      reject(err);
    };
    stream.once('data', onData);
    stream.once('error', onError);
  });
}

const raw = (entries: [string, string][]) =>
  entries.map(([key, value]) => ({ key: key.toLowerCase(), raw_value: Buffer.from(value, 'latin1') }));

export function registerExtProcFrontDoor(): void {
  useExtProcFrontDoor(async (router: Router) => {
    const server = await createExtProcServer(router, { port: 0, host: '127.0.0.1', drainTimeoutMs: 1000 });
    const protos = loadProtos();
    const method = protos.extProc.Process as MethodDefinition<ProcessingRequest, ProcessingResponse>;
    const client = new Client(`127.0.0.1:${server.port}`, credentials.createInsecure());
    const header = router.config.envoy.destinationHeader;
    const picker = async (req: LoadRequest): Promise<TargetPick> => {
      const stream: Stream = client.makeBidiStreamRequest(
        method.path,
        method.requestSerialize,
        method.responseDeserialize,
        new Metadata(),
      );
      stream.on('error', () => {}); // the outcome is read from the replies; a late reset is not news
      stream.write({
        request_headers: {
          headers: {
            headers: raw([
              [':authority', 'gateway.bench'],
              [':path', req.path],
              [':method', 'POST'],
              [':scheme', 'http'],
              ...Object.entries(req.headers),
            ]),
          },
          end_of_stream: false,
        },
      });
      const reply = await nextMessage(stream);
      const set = reply.request_headers?.response?.header_mutation?.set_headers ?? [];
      const value = set.find((h) => h.header.key === header)?.header.raw_value;
      const dest = value === undefined ? undefined : Buffer.from(value).toString('latin1');
      if (!dest) {
        stream.end();
        const status = reply.immediate_response?.status?.code ?? 'none';
        throw new Error(`ext_proc gave no destination (immediate response ${status})`);
      }
      return {
        baseUrl: `http://${dest.split(',')[0]}`,
        done: (outcome: PickOutcome) => {
          const status = outcome === 'failure' ? '502' : '200';
          stream.write({
            response_headers: { headers: { headers: raw([[':status', status]]) }, end_of_stream: false },
          });
          void nextMessage(stream)
            .catch(() => undefined)
            .finally(() => stream.end());
        },
      };
    };
    return {
      picker,
      close: async () => {
        client.close();
        await server.close();
      },
    };
  });
}
