import {
  status as GrpcStatus,
  type sendUnaryData,
  type ServerUnaryCall,
  type ServerWritableStream,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import type { HealthCheckRequest, HealthCheckResponse, ServingStatus } from './messages.js';

type Watcher = ServerWritableStream<HealthCheckRequest, HealthCheckResponse>;

/**
 * grpc.health.v1.Health for the services of one server: "" (the server as a whole) plus each
 * named service. Check answers NOT_FOUND for names it does not know, as the protocol asks; Watch
 * streams every change and is ended by shutdown() so a draining server is not held open by it.
 */
export class HealthService {
  readonly #statuses = new Map<string, ServingStatus>();
  readonly #watchers = new Set<{ service: string; call: Watcher; last?: ServingStatus }>();

  constructor(services: readonly string[], initial: ServingStatus = 'NOT_SERVING') {
    for (const name of ['', ...services]) this.#statuses.set(name, initial);
  }

  status(service = ''): ServingStatus | undefined {
    return this.#statuses.get(service);
  }

  /** Sets one service's status (adding the name if new) and tells its watchers. */
  set(service: string, status: ServingStatus): void {
    if (this.#statuses.get(service) === status) return;
    this.#statuses.set(service, status);
    for (const w of this.#watchers) if (w.service === service) this.#send(w);
  }

  /** Sets every known service's status and tells the watchers. */
  setAll(status: ServingStatus): void {
    for (const name of this.#statuses.keys()) this.#statuses.set(name, status);
    for (const w of this.#watchers) this.#send(w);
  }

  /** NOT_SERVING to everyone, then ends the watch streams. */
  shutdown(): void {
    this.setAll('NOT_SERVING');
    for (const w of this.#watchers) w.call.end();
    this.#watchers.clear();
  }

  /** Sends the watcher its service's status if it changed since the last message. */
  #send(w: { service: string; call: Watcher; last?: ServingStatus }): void {
    const status = this.#statuses.get(w.service) ?? 'SERVICE_UNKNOWN';
    if (status === w.last || w.call.cancelled || w.call.writableEnded) return;
    w.last = status;
    w.call.write({ status });
  }

  implementation(): UntypedServiceImplementation {
    return {
      Check: (
        call: ServerUnaryCall<HealthCheckRequest, HealthCheckResponse>,
        callback: sendUnaryData<HealthCheckResponse>,
      ) => {
        const service = call.request.service ?? '';
        const status = this.#statuses.get(service);
        if (status === undefined) {
          callback({ code: GrpcStatus.NOT_FOUND, details: `unknown service ${JSON.stringify(service)}` });
        } else {
          callback(null, { status });
        }
      },
      List: (
        _call: ServerUnaryCall<unknown, unknown>,
        callback: sendUnaryData<{ statuses: Record<string, HealthCheckResponse> }>,
      ) => {
        const statuses: Record<string, HealthCheckResponse> = {};
        for (const [name, status] of this.#statuses) statuses[name] = { status };
        callback(null, { statuses });
      },
      Watch: (call: Watcher) => {
        const service = call.request.service ?? '';
        const watcher: { service: string; call: Watcher; last?: ServingStatus } = { service, call };
        this.#watchers.add(watcher);
        const forget = () => this.#watchers.delete(watcher);
        call.on('cancelled', forget);
        call.on('close', forget);
        call.on('error', forget);
        this.#send(watcher);
      },
    };
  }
}
