import {
  Server,
  ServerCredentials,
  status as GrpcStatus,
  type MethodDefinition,
  type ServerDuplexStream,
  type ServiceDefinition,
} from '@grpc/grpc-js';
import { z } from 'zod';
import { configSchema } from '../config/schema.js';
import { parseOrThrow } from '../config/validate.js';
import type { Router } from '../router.js';
import { ExtProcListenError } from './errors.js';
import { ExtProcStream } from './ext-proc-stream.js';
import { HealthService } from './health-service.js';
import type { ProcessingRequest, ProcessingResponse } from './messages.js';
import { EXT_PROC_SERVICE, loadProtos } from './proto-loader.js';
import { encodeOnce, RouteResponseCache } from './responses.js';

export interface ExtProcServerOptions {
  /** Defaults to `router.config.envoy.port`; 0 picks a free port. */
  port?: number;
  /** Defaults to `router.config.host`. */
  host?: string;
  /** Defaults to `router.config.envoy.destinationHeader`. */
  destinationHeader?: string;
  /** Defaults to `router.config.envoy.fallbacks`. */
  fallbacks?: number;
  /** How long close() lets open streams finish; defaults to `router.config.shutdown.drainTimeoutSecs`. */
  drainTimeoutMs?: number;
  /** Told when a Process stream opens and when it ends (once each), e.g. for metrics. */
  observer?: { onStreamOpen?(): void; onStreamClose?(): void };
}

export interface ExtProcServer {
  readonly port: number;
  /** Process streams open right now (each holds at most one lease). */
  readonly activeStreams: number;
  /**
   * Drains: health NOT_SERVING, no new streams, open ones get up to drainTimeoutMs and are then
   * ended cleanly (Envoy carries on without us); every lease is released by the time it resolves.
   */
  close(): Promise<void>;
}

/**
 * Health service names besides "" and the ExternalProcessor itself, as the Gateway API Inference
 * Extension's endpoint picker exposes them: liveness is SERVING while the server runs, readiness
 * only while at least one worker can take requests.
 */
export const LIVENESS_SERVICE = 'liveness';
export const READINESS_SERVICE = 'readiness';

// Envoy's per-connection buffer defaults to 1 MiB, but operators raise it for long prompts.
const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

const drainTimeoutSchema = z
  .number({ error: 'must be a finite number of milliseconds >= 0' })
  .refine((v) => Number.isFinite(v) && v >= 0, { error: 'must be a finite number of milliseconds >= 0' });

/** After ending leftover streams cleanly, how long peers get to close their connections. */
const FORCE_AFTER_MS = 1000;

/** True if `promise` settles within `ms`. */
async function settlesWithin(promise: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** `host:port` for grpc-js, bracketing a bare IPv6 address. */
function bindAddress(host: string, port: number): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * Starts the Envoy ext_proc server (envoy.service.ext_proc.v3.ExternalProcessor/Process plus
 * grpc.health.v1.Health) and resolves once it listens. Every stream's lease is released exactly
 * once, whether the stream completes, is cancelled, times out, errors, or its connection drops.
 */
export async function createExtProcServer(
  router: Router,
  options: ExtProcServerOptions = {},
): Promise<ExtProcServer> {
  // The envoy section of the config schema is the one place these rules live.
  const envoy = parseOrThrow(
    configSchema.shape.envoy.unwrap(),
    {
      ...router.config.envoy,
      ...(options.port !== undefined && { port: options.port }),
      ...(options.destinationHeader !== undefined && { destinationHeader: options.destinationHeader }),
      ...(options.fallbacks !== undefined && { fallbacks: options.fallbacks }),
    },
    'envoy',
  );
  const host = parseOrThrow(configSchema.shape.host.unwrap(), options.host ?? router.config.host, 'host');
  const drainTimeoutMs = parseOrThrow(
    drainTimeoutSchema,
    options.drainTimeoutMs ?? router.config.shutdown.drainTimeoutSecs * 1000,
    'drainTimeoutMs',
  );

  const protos = loadProtos();
  const health = new HealthService([EXT_PROC_SERVICE, LIVENESS_SERVICE, READINESS_SERVICE]);
  /** Open streams, each with how to end it cleanly (status OK). */
  const streams = new Map<ExtProcStream, () => void>();
  const streamOptions = {
    destinationHeader: envoy.destinationHeader,
    fallbacks: envoy.fallbacks,
    responses: new RouteResponseCache(envoy.destinationHeader),
  };

  const handleProcess = (call: ServerDuplexStream<ProcessingRequest, ProcessingResponse>): void => {
    const stream = new ExtProcStream(router, streamOptions);
    options.observer?.onStreamOpen?.();
    const finish = () => {
      stream.finish();
      if (streams.delete(stream)) options.observer?.onStreamClose?.();
    };
    streams.set(stream, () => {
      finish();
      if (!call.writableEnded) call.end();
    });
    call.on('data', (req: ProcessingRequest) => {
      if (call.cancelled || call.destroyed) return finish();
      let res: ProcessingResponse | undefined;
      try {
        res = stream.handle(req);
      } catch (err) {
        // A bug, not a routing outcome: fail the stream so Envoy applies failure_mode_allow.
        finish();
        call.emit('error', {
          code: GrpcStatus.INTERNAL,
          details: err instanceof Error ? err.message : String(err),
        });
        return;
      }
      if (res !== undefined && !call.writableEnded) call.write(res);
    });
    // Envoy half-closes when the HTTP request is done: answer with OK and let the stream close.
    call.on('end', () => {
      finish();
      if (!call.writableEnded) call.end();
    });
    call.on('cancelled', () => finish());
    call.on('error', () => finish());
    call.on('close', () => finish());
  };

  const server = new Server({
    'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
    'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
  });
  const processMethod = protos.extProc.Process as MethodDefinition<ProcessingRequest, ProcessingResponse>;
  const extProc: ServiceDefinition = {
    Process: { ...processMethod, responseSerialize: encodeOnce(processMethod.responseSerialize) },
  };
  server.addService(extProc, { Process: handleProcess });
  server.addService(protos.health, health.implementation());

  const address = bindAddress(host, envoy.port);
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(address, ServerCredentials.createInsecure(), (err, bound) => {
      if (err) reject(new ExtProcListenError(address, err));
      else resolve(bound);
    });
  }).catch((err: unknown) => {
    server.forceShutdown();
    throw err;
  });
  health.setAll('SERVING');
  const updateReadiness = () =>
    health.set(READINESS_SERVICE, router.pool.candidates().length > 0 ? 'SERVING' : 'NOT_SERVING');
  updateReadiness();
  const unobserve = router.observe({
    onAdd: updateReadiness,
    onRemove: updateReadiness,
    onHealthChange: updateReadiness,
  });

  let closing: Promise<void> | undefined;
  const close = async (): Promise<void> => {
    unobserve();
    health.shutdown();
    // No new connections or streams from here on; open streams run to their natural end.
    const drained = new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
    if (!(await settlesWithin(drained, drainTimeoutMs))) {
      // Out of time: end what is left with status OK. Envoy takes a cleanly closed stream as
      // "carry on without the processor", so a generation in progress continues; an error close
      // would make a fail-closed Envoy reset the client's request instead.
      for (const endCleanly of [...streams.values()]) endCleanly();
      if (!(await settlesWithin(drained, FORCE_AFTER_MS))) server.forceShutdown();
    }
    for (const stream of streams.keys()) stream.finish();
    streams.clear();
  };

  return {
    port,
    get activeStreams() {
      return streams.size;
    },
    close: () => (closing ??= close()),
  };
}
